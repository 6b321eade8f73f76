/**
 * The Event Grid emulator: the custom topics of the topology over HTTPS (Event Grid or CloudEvents 1.0
 * schema, access key, SAS token or Microsoft Entra token), and push delivery of their events to the
 * Functions host's Event Grid webhook or to webhooks (CloudEvents ones after the abuse-protection
 * handshake), retried on Event Grid's schedule, dead-lettered, and persisted so that a restart resumes
 * pending deliveries.
 */
import { z } from 'zod';
import { RESOURCE_GROUP, SUBSCRIPTION_ID } from '../core/arm.ts';
import { defineEmulator } from '../core/emulator.ts';
import { close, createTlsServer, LOOPBACK, listen, probe } from '../core/http.ts';
import { publisherAuth } from './auth.ts';
import { createDeliverer } from './delivery.ts';
import { entraPublishers } from './entra.ts';
import { EventGridError, sendError } from './errors.ts';
import { eventGridHandler, type TopicEndpoint } from './routes.ts';
import { createStore } from './store.ts';

/**
 * A topic's ARM id (core/arm.ts); each event's `topic` says it in the form Azure stamps it (provider in
 * lower case).
 */
const armId = (topic: string) =>
  `/subscriptions/${SUBSCRIPTION_ID}/resourceGroups/${RESOURCE_GROUP}/providers/Microsoft.EventGrid/topics/${topic}`;
const resourceId = (topic: string) => armId(topic).replace('Microsoft.EventGrid', 'microsoft.eventgrid');

export default defineEmulator({
  name: 'eventgrid',
  options: z.object({
    port: z.number().int().min(0).max(65535),
    /** The Functions host deliveries go to (`http://127.0.0.1:7071`); without it, every attempt fails. */
    functionsBaseUrl: z.string().url().optional(),
    /** The identity provider whose tokens publishers may bring; without it, bearer tokens get 401. */
    issuer: z.string().url().optional(),
    jwksUri: z.string().url().optional(),
  }),
  async start(options, context) {
    const topics = context.topology.eventGrid.topics;
    const { issuer, jwksUri } = options;
    const provider = issuer && jwksUri ? { issuer, jwksUri } : undefined;
    const server = createTlsServer(context.tls);
    // Topic URLs name the port: requests are served once it is known.
    let handle: ReturnType<typeof eventGridHandler> | undefined;
    server.on('request', (req, res) => {
      if (!handle) {
        return sendError(
          res,
          new EventGridError(503, 'ServiceUnavailable', 'The service is starting.'),
          context.clock,
        );
      }
      handle(req, res).catch((error: Error) => {
        context.log(`request failed: ${error.message}`);
        if (res.headersSent) return res.destroy();
        const internal = new EventGridError(
          500,
          'InternalServerError',
          'The service encountered an internal error.',
        );
        sendError(res, internal, context.clock);
      });
    });
    const port = await listen(server, options.port);
    // Only once listening: a start that fails leaves no delivery timers behind.
    const deliverer = createDeliverer({
      topics,
      functionsBaseUrl: options.functionsBaseUrl,
      extensionKey: context.secrets.eventGridExtensionKey,
      clock: context.clock,
      store: createStore(context.stateDir),
      log: context.log,
    });
    const origin = `https://${LOOPBACK}:${port}`;
    const endpoints = new Map<string, TopicEndpoint>(
      topics.map(({ name, inputSchema }) => [
        name.toLowerCase(),
        {
          name,
          url: `${origin}/${name}/api/events`,
          resourceId: resourceId(name),
          armId: armId(name),
          inputSchema,
        },
      ]),
    );
    handle = eventGridHandler({
      topics: endpoints,
      origin,
      auth: publisherAuth(
        context.secrets.eventGridKey,
        LOOPBACK,
        context.clock,
        entraPublishers(provider, topics, context.secrets),
      ),
      deliverer,
      clock: context.clock,
    });
    context.log(`topics ${[...endpoints.values()].map((topic) => topic.url).join(', ')}`);
    return {
      endpoints: Object.fromEntries([...endpoints.values()].map((topic) => [topic.name, topic.url])),
      async health() {
        for (const { url } of endpoints.values()) {
          const status = await probe(url, { method: 'OPTIONS', ca: context.tls.ca });
          if (status !== 200) throw new Error(`${url} answered ${status}`);
        }
      },
      async stop() {
        // No publish may slip in once deliveries stop.
        await close(server);
        await deliverer.stop();
      },
      actions: {
        deliveries: async () => deliverer.deliveries(),
        deadLetters: async () => deliverer.deadLetters(),
      },
    };
  },
});
