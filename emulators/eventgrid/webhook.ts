/**
 * One delivery on the wire, as Event Grid makes it: a POST of one event to the subscription's endpoint —
 * the Functions host's Event Grid extension webhook (with its `eventgrid_extension` system key) for an
 * `AzureFunction` endpoint, the given URL for a `WebHook` — with Event Grid's `aeg-*` headers. Event Grid
 * schema goes as a one-event JSON array; CloudEvents as one structured event. A CloudEvents webhook is
 * first validated with the CloudEvents abuse-protection handshake (an OPTIONS request), once per run.
 */
import { STATUS_CODES } from 'node:http';
import type { EventGridTopic, EventSubscription } from '../core/topology.ts';
import { type CloudEvent, isCloudEvent, toCloudEvent } from './cloudevents.ts';
import type { GridEvent } from './events.ts';

/** Event Grid waits 30 s for an answer (real time: this bounds a network wait, not a schedule). */
const RESPONSE_TIMEOUT_MS = 30_000;
/** The origin Event Grid names in the CloudEvents handshake. */
const ORIGIN = 'eventgrid.azure.net';

export interface WebhookResult {
  status?: number;
  /** `Delivered`, or how it failed in Event Grid's words (`InternalServerError`, `TimedOut` …). */
  outcome: string;
  error?: string;
}

export interface WebhookOptions {
  topics: readonly EventGridTopic[];
  /** The Functions host (`http://127.0.0.1:7071`), or undefined when the stack gave none. */
  functionsBaseUrl: string | undefined;
  extensionKey: string;
}

/** `Service Unavailable` → `ServiceUnavailable`, as .NET names HTTP statuses. */
const pascal = (text: string) =>
  text.replace(/[^A-Za-z]+(.)?/g, (_, c: string | undefined) => c?.toUpperCase() ?? '');

const timeout = (signal: AbortSignal) => AbortSignal.any([signal, AbortSignal.timeout(RESPONSE_TIMEOUT_MS)]);

/** The CloudEvents webhook handshake: undefined when the endpoint allows Event Grid's origin, else why not. */
async function handshake(url: string, signal: AbortSignal): Promise<string | undefined> {
  const response = await fetch(url, {
    method: 'OPTIONS',
    headers: { 'webhook-request-origin': ORIGIN },
    signal: timeout(signal),
  });
  await response.body?.cancel();
  const allowed = response.headers.get('webhook-allowed-origin')?.trim();
  if (response.ok && (allowed === ORIGIN || allowed === '*')) return undefined;
  return `the CloudEvents abuse-protection handshake (OPTIONS) did not allow the origin ${ORIGIN}`;
}

export function createWebhook(options: WebhookOptions) {
  const schemaOf = new Map(
    options.topics.flatMap((topic) =>
      topic.subscriptions.map((s) => [s.name, s.eventDeliverySchema ?? topic.inputSchema] as const),
    ),
  );
  /** Handshakes by URL, shared by concurrent deliveries; a refused one is forgotten so a later attempt asks again. */
  const validations = new Map<string, Promise<string | undefined>>();
  const validate = (url: string, signal: AbortSignal) => {
    let validation = validations.get(url);
    if (!validation) {
      validation = handshake(url, signal).then(
        (refused) => {
          if (refused) validations.delete(url);
          return refused;
        },
        (error: unknown) => {
          validations.delete(url);
          throw error;
        },
      );
      validations.set(url, validation);
    }
    return validation;
  };

  function urlOf(subscription: EventSubscription): string | undefined {
    if (subscription.endpointType === 'WebHook') return subscription.endpointUrl;
    if (!options.functionsBaseUrl) return undefined;
    const query = new URLSearchParams({ functionName: subscription.function, code: options.extensionKey });
    return `${options.functionsBaseUrl.replace(/\/$/, '')}/runtime/webhooks/eventgrid?${query}`;
  }

  return {
    async send(
      subscription: EventSubscription,
      event: GridEvent | CloudEvent,
      deliveryCount: number,
      signal: AbortSignal,
    ): Promise<WebhookResult> {
      const url = urlOf(subscription);
      if (!url) return { outcome: 'GenericError', error: 'no functionsBaseUrl configured' };
      const cloud = schemaOf.get(subscription.name) === 'CloudEventSchemaV1_0';
      const headers: Record<string, string> = {
        'aeg-event-type': 'Notification',
        // Event Grid names the subscription in capitals.
        'aeg-subscription-name': subscription.name.toUpperCase(),
        // Attempts made before this one: the first delivery says 0.
        'aeg-delivery-count': String(deliveryCount),
      };
      let body: string;
      if (cloud) {
        headers['content-type'] = 'application/cloudevents+json; charset=utf-8';
        body = JSON.stringify(isCloudEvent(event) ? event : toCloudEvent(event));
      } else {
        const grid = event as GridEvent;
        headers['content-type'] = 'application/json; charset=utf-8';
        headers['aeg-data-version'] = grid.dataVersion;
        headers['aeg-metadata-version'] = grid.metadataVersion;
        body = JSON.stringify([grid]);
      }
      try {
        if (cloud && subscription.endpointType === 'WebHook') {
          const refused = await validate(url, signal);
          if (refused) return { outcome: 'GenericError', error: refused };
        }
        const response = await fetch(url, { method: 'POST', headers, body, signal: timeout(signal) });
        await response.body?.cancel();
        if (response.status >= 200 && response.status < 300)
          return { status: response.status, outcome: 'Delivered' };
        return { status: response.status, outcome: pascal(STATUS_CODES[response.status] ?? 'GenericError') };
      } catch (error) {
        const { name, message, cause } = error as Error & { cause?: { code?: string } };
        // fetch says only "fetch failed"; the cause says why (ECONNREFUSED …). Neither carries the URL or key.
        return {
          outcome: name === 'TimeoutError' ? 'TimedOut' : 'GenericError',
          error: cause?.code ?? message,
        };
      }
    },
  };
}

export type Webhook = ReturnType<typeof createWebhook>;
