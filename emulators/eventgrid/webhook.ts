/**
 * One delivery on the wire, as Event Grid makes it to an `AzureFunction` endpoint: a POST of a one-event
 * JSON array to the Functions host's Event Grid extension webhook, carrying the host's
 * `eventgrid_extension` system key and Event Grid's `aeg-*` headers.
 */
import { STATUS_CODES } from 'node:http';
import type { GridEvent } from './events.ts';

/** Event Grid waits 30 s for an answer (real time: this bounds a network wait, not a schedule). */
const RESPONSE_TIMEOUT_MS = 30_000;

export interface WebhookTarget {
  /** The Functions host (`http://127.0.0.1:7071`), or undefined when the stack gave none. */
  baseUrl: string | undefined;
  extensionKey: string;
  functionName: string;
  subscriptionName: string;
}

export interface WebhookResult {
  status?: number;
  /** `Delivered`, or how it failed in Event Grid's words (`InternalServerError`, `TimedOut` …). */
  outcome: string;
  error?: string;
}

/** `Service Unavailable` → `ServiceUnavailable`, as .NET names HTTP statuses. */
const pascal = (text: string) =>
  text.replace(/[^A-Za-z]+(.)?/g, (_, c: string | undefined) => c?.toUpperCase() ?? '');

export async function deliverToFunction(
  target: WebhookTarget,
  event: GridEvent,
  deliveryCount: number,
  signal: AbortSignal,
): Promise<WebhookResult> {
  if (!target.baseUrl) return { outcome: 'GenericError', error: 'no functionsBaseUrl configured' };
  const query = new URLSearchParams({ functionName: target.functionName, code: target.extensionKey });
  try {
    const response = await fetch(`${target.baseUrl.replace(/\/$/, '')}/runtime/webhooks/eventgrid?${query}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'aeg-event-type': 'Notification',
        // Event Grid names the subscription in capitals.
        'aeg-subscription-name': target.subscriptionName.toUpperCase(),
        // Attempts made before this one: the first delivery says 0.
        'aeg-delivery-count': String(deliveryCount),
        'aeg-data-version': event.dataVersion,
        'aeg-metadata-version': event.metadataVersion,
      },
      body: JSON.stringify([event]),
      signal: AbortSignal.any([signal, AbortSignal.timeout(RESPONSE_TIMEOUT_MS)]),
    });
    await response.body?.cancel();
    if (response.status >= 200 && response.status < 300)
      return { status: response.status, outcome: 'Delivered' };
    return { status: response.status, outcome: pascal(STATUS_CODES[response.status] ?? 'GenericError') };
  } catch (error) {
    const { name, message, cause } = error as Error & { cause?: { code?: string } };
    // fetch says only "fetch failed"; the cause says why (ECONNREFUSED …). Neither carries the URL or key.
    return { outcome: name === 'TimeoutError' ? 'TimedOut' : 'GenericError', error: cause?.code ?? message };
  }
}
