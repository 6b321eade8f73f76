/**
 * The Event Grid topic's HTTP surface: `POST /<topic>/api/events` (Azure puts the topic in the host name;
 * here every topic shares one host, so it leads the path). Checks run in the service's order: route,
 * method, key or token, size, schema (the topic's input schema: Event Grid or CloudEvents 1.0); the events are queued for delivery before the 200 goes out.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StackClock } from '../core/clock.ts';
import { BodyTooLargeError, readBody } from '../core/http.ts';
import type { PublisherAuth } from './auth.ts';
import { parseCloudEvents } from './cloudevents.ts';
import type { Deliverer } from './delivery.ts';
import { EventGridError, sendError } from './errors.ts';
import { MAX_REQUEST_BYTES, parseEvents } from './events.ts';

export interface TopicEndpoint {
  name: string;
  /** The publish URL (no query). */
  url: string;
  /** What the service stamps into each event's `topic`. */
  resourceId: string;
  /** The topic's resource id as Azure's error texts name it (provider as ARM spells it). */
  armId: string;
  inputSchema: 'EventGridSchema' | 'CloudEventSchemaV1_0';
}

export interface RoutesOptions {
  /** Keyed by lower-cased topic name: Azure host names are case-insensitive. */
  topics: Map<string, TopicEndpoint>;
  origin: string;
  auth: PublisherAuth;
  deliverer: Deliverer;
  clock: StackClock;
}

const ALLOW = { allow: 'POST, OPTIONS' };

export function eventGridHandler(options: RoutesOptions) {
  const { topics, origin, auth, deliverer } = options;

  async function publish(req: IncomingMessage, res: ServerResponse) {
    const { pathname: path, searchParams } = new URL(req.url ?? '/', origin);
    const name = /^\/([^/]+)\/api\/events\/?$/i.exec(path)?.[1];
    const topic = name === undefined ? undefined : topics.get(name.toLowerCase());
    if (!topic) {
      throw new EventGridError(
        404,
        'ResourceNotFound',
        `No HTTP resource was found that matches the request URI '${origin}${req.url ?? '/'}'.`,
      );
    }
    if (req.method === 'OPTIONS') return res.writeHead(200, { ...ALLOW, 'content-length': 0 }).end();
    if (req.method !== 'POST') {
      throw new EventGridError(
        405,
        'MethodNotAllowed',
        `The requested resource does not support http method '${req.method}'.`,
        true,
        ALLOW,
      );
    }
    await auth.check(req.headers, searchParams, {
      ...topic,
      url: `https://${req.headers.host ?? ''}/${name}/api/events`,
    });
    let body: Buffer;
    try {
      body = await readBody(req, MAX_REQUEST_BYTES);
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error;
      throw new EventGridError(
        413,
        'PayloadTooLarge',
        `The maximum size (${error.limit}) has been exceeded.`,
        false,
      );
    }
    const events =
      topic.inputSchema === 'CloudEventSchemaV1_0'
        ? parseCloudEvents(body, req.headers['content-type'])
        : parseEvents(body, topic.resourceId);
    deliverer.publish(topic.name, events);
    res.writeHead(200, { 'content-length': 0 }).end();
  }

  return async (req: IncomingMessage, res: ServerResponse) => {
    try {
      await publish(req, res);
    } catch (error) {
      if (!(error instanceof EventGridError)) throw error;
      // A body left unread (refused before or while reading it) is not drained: the connection closes.
      if (!req.complete) res.setHeader('connection', 'close');
      sendError(res, error, options.clock);
    }
  };
}
