/**
 * The Event Grid output binding (`topicEndpointUri` + `topicKeySetting`): the invocation's events posted
 * as the publisher client does (a JSON array, the key in `aeg-sas-key`), with the client's default retry
 * policy (Azure.Core: 3 retries, exponential from 0.8 s ±20 %, at most 1 min, or longer if the topic
 * asks with `Retry-After`: retryDelay) for connection failures, 408, 429 and 5xx.
 *
 * Where this differs from Azure's binding, which sends all of an invocation's events in one request: the
 * events go in as few requests as Event Grid's 1 MB request limit allows, so that one event Event Grid
 * refuses (over 1 MB: 413) fails alone and the others are published. Whatever could not be published
 * still fails the invocation, naming each such event (subject and id) and the topic's answer; as in
 * Azure, a trigger that checkpoints regardless of the outcome (Cosmos DB, Event Hubs) then moves on.
 * When the host stops, no retry follows (Azure's host cancels the invocation's token as it shuts down),
 * so a failing topic does not hold the stop for the policy's ~6 s: what is not published by then fails
 * the invocation, saying so. A try under way still ends as it will (Azure's cancellation would cut it
 * short), so that a topic that answers loses nothing.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Settings } from '../connections.ts';
import type { BindingInfo, RpcTypedData } from '../core-api.ts';
import { typedDataBytes } from './data.ts';

/** Event Grid's documented limit for a request (and for each event of it). */
const MAX_REQUEST_BYTES = 1_048_576;
/** Azure.Core's default RetryOptions. */
const RETRY = { maxRetries: 3, delayMs: 800, maxDelayMs: 60_000 };
const TRANSIENT = new Set([408, 429, 500, 502, 503, 504]);

type Event = Record<string, unknown>;

/** Consecutive events grouped into requests of at most MAX_REQUEST_BYTES; a bigger event goes alone. */
function requests(events: Event[]): Event[][] {
  const groups: Event[][] = [];
  let group: Event[] = [];
  let size = 2; // the array's brackets
  for (const event of events) {
    const bytes = Buffer.byteLength(JSON.stringify(event)) + 1;
    if (group.length > 0 && size + bytes > MAX_REQUEST_BYTES) {
      groups.push(group);
      group = [];
      size = 2;
    }
    group.push(event);
    size += bytes;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

/** Longest wait a timer takes: a longer one would fire at once (Node's TimeoutOverflowWarning). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The wait the topic asked for, read as Azure.Core's `ResponseHeaders.RetryAfter`: `retry-after-ms`
 * (or else `x-ms-retry-after-ms`) in whole milliseconds, else `Retry-After` in whole seconds or as an
 * HTTP date; 0 when it asked for none it understands.
 */
function askedDelayMs(headers: Headers | undefined): number {
  // .NET's int.TryParse: an optional sign, digits, surrounding spaces, within 32 bits.
  const whole = (value: string | null | undefined) => {
    const number = value != null && /^\s*[+-]?\d+\s*$/.test(value) ? Number(value) : Number.NaN;
    return number >= -(2 ** 31) && number < 2 ** 31 ? number : undefined;
  };
  const ms = whole(headers?.get('retry-after-ms') ?? headers?.get('x-ms-retry-after-ms'));
  if (ms !== undefined) return ms;
  const retryAfter = headers?.get('retry-after');
  const seconds = whole(retryAfter);
  if (seconds !== undefined) return seconds * 1000;
  const date = retryAfter ? Date.parse(retryAfter) : Number.NaN;
  return Number.isNaN(date) ? 0 : date - Date.now();
}

/**
 * The wait before retry `retry` (1-based) after an answer with `headers` (none for a failed connection),
 * as Azure.Core's DelayStrategy computes it: the larger of what the topic asked for (not capped) and the
 * exponential backoff with its ±20 % jitter (capped at 1 min). A topic answering `Retry-After: 0` is
 * therefore still retried after the backoff, as in Azure.
 */
export function retryDelay(retry: number, headers?: Headers): number {
  const jittered = RETRY.delayMs * (0.8 + Math.random() * 0.4);
  const backoff = Math.min(2 ** (retry - 1) * jittered, RETRY.maxDelayMs);
  return Math.min(Math.max(askedDelayMs(headers), backoff), MAX_TIMER_MS);
}

/**
 * One request with the retry policy: undefined when published, else why not. Once `stopping` is aborted
 * a try under way still ends as it will (a topic that answers loses nothing), but no retry follows.
 */
async function post(
  endpoint: string,
  key: string,
  contentType: string,
  events: Event[],
  stopping: AbortSignal,
) {
  const body = JSON.stringify(events);
  for (let retry = 0; ; retry++) {
    let failure: string;
    let headers: Headers | undefined;
    let transient = true;
    try {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'aeg-sas-key': key, 'content-type': contentType },
        body,
      });
      if (response.ok) return undefined;
      failure = `the topic answered ${response.status} ${(await response.text()).slice(0, 500)}`;
      headers = response.headers;
      transient = TRANSIENT.has(response.status);
    } catch (error) {
      const { message, cause } = error as Error & { cause?: Error };
      failure = cause?.message ? `${message}: ${cause.message}` : message;
    }
    if (!transient || retry === RETRY.maxRetries) return failure;
    // The wait ends at once (rejects) if the host stops meanwhile, or has stopped already.
    await delay(retryDelay(retry + 1, headers), undefined, { signal: stopping }).catch(() => {});
    if (stopping.aborted) return `the host is stopping (its last try: ${failure})`;
  }
}

export async function publishEvents(
  binding: BindingInfo,
  data: RpcTypedData,
  settings: Settings,
  stopping: AbortSignal,
) {
  const endpointSetting = binding.topicEndpointUri as string | undefined;
  const keySetting = binding.topicKeySetting as string | undefined;
  if (!endpointSetting || !keySetting) {
    throw new Error(
      'eventGrid output: only topicEndpointUri + topicKeySetting connections are supported here',
    );
  }
  const endpoint = settings[endpointSetting];
  const key = settings[keySetting];
  if (!endpoint || !key)
    throw new Error(`eventGrid output: app settings ${endpointSetting} and ${keySetting} must be set`);
  const parsed = JSON.parse(typedDataBytes(data).toString('utf8')) as unknown;
  const events = (Array.isArray(parsed) ? parsed : [parsed]) as Event[];
  const cloudEvents = events.some(
    (event) => typeof event === 'object' && event !== null && 'specversion' in event,
  );
  const contentType = cloudEvents ? 'application/cloudevents-batch+json; charset=utf-8' : 'application/json';
  const failed: string[] = [];
  for (const group of requests(events)) {
    const failure = await post(endpoint, key, contentType, group, stopping);
    if (failure === undefined) continue;
    for (const event of group)
      failed.push(`Event subject ${event?.subject ?? '-'} (id ${event?.id ?? '-'}): ${failure}`);
  }
  if (failed.length > 0) {
    throw new Error(
      `eventGrid output: ${failed.length} of ${events.length} event(s) not published. ${failed.join('; ')}`,
    );
  }
}
