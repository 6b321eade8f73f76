/**
 * The Event Hubs output binding (`output.eventHub`), as the Functions host and the Event Hubs extension
 * 5.x/6.x send a Node app's value:
 * - what becomes events is the host's (FunctionBinding.ReadAsEnumerable, then `IAsyncCollector<byte[]>`,
 *   the collector type the extension's rule offers first): a Buffer is one event of its bytes; a string
 *   is one event of its UTF-8 text, unless it looks like JSON (`{…}` or `[…]` once trimmed), which is
 *   parsed: an array gives one event per element, anything else one event; an object or array set
 *   directly is the same JSON. Each element is written as Json.NET's `JToken.ToString()` writes it:
 *   objects and arrays indented by two spaces (azure-functions-host#9581), a string as its text, `true`
 *   as `True`, null as an empty event, numbers as JavaScript writes them.
 * - how they are sent is the extension's (EventHubAsyncCollector): one batch for the invocation, sent to
 *   the hub without a partition key (the service places the whole batch in one partition); a batch that
 *   is full is sent and a new one begun; an event that fits no batch fails the invocation with the
 *   extension's words, and what was not yet sent stays unsent.
 * - the connection is the extension's (`eventHubConnection`), the client retries as host.json's
 *   `clientRetryOptions` say, one producer per namespace and hub, as its EventHubClientFactory caches them.
 */
import type { EventHubProducerClient } from '@azure/event-hubs';
import { appCredential, eventHubConnection, eventHubsErrorText, type Settings } from '../connections.ts';
import type { BindingInfo, RpcTypedData } from '../core-api.ts';
import { type ClientRetryOptions, sdkRetryOptions } from '../eventhub-retry.ts';

/** The host's Utility.IsJson: `{…}` or `[…]` once trimmed. */
function looksLikeJson(text: string): boolean {
  const trimmed = text.trim();
  return (
    (trimmed.startsWith('{') && trimmed.endsWith('}')) || (trimmed.startsWith('[') && trimmed.endsWith(']'))
  );
}

/** An element as Json.NET's JToken.ToString() writes it (Linux's newline, as the host runs there). */
function tokenText(value: unknown): string {
  if (value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') return String(value);
  return JSON.stringify(value, null, 2);
}

/** The events' bodies a function's value becomes. */
export function eventBodies(data: RpcTypedData): Buffer[] {
  if (data.bytes) return [Buffer.from(data.bytes)];
  if (data.int !== undefined && data.int !== null) return [Buffer.from(String(data.int))];
  if (data.double !== undefined && data.double !== null) return [Buffer.from(String(data.double))];
  let value: unknown = data.json !== undefined && data.json !== null ? JSON.parse(data.json) : data.string;
  if (typeof value === 'string') {
    if (!looksLikeJson(value)) return [Buffer.from(value)];
    value = JSON.parse(value);
  }
  return (Array.isArray(value) ? value : [value]).map((element) => Buffer.from(tokenText(element)));
}

/** The producers of one host, one per namespace and hub, retrying as host.json says; closed when the host stops. */
export class EventHubProducers {
  readonly #producers = new Map<string, Promise<EventHubProducerClient>>();
  readonly #retry: ClientRetryOptions;

  constructor(retry: ClientRetryOptions) {
    this.#retry = retry;
  }

  #producer(settings: Settings, binding: BindingInfo): Promise<EventHubProducerClient> {
    const target = eventHubConnection(settings, binding);
    const key = `${'connection' in target ? target.connection : target.namespace}|${target.hub}`;
    let producer = this.#producers.get(key);
    if (!producer) {
      // The SDK is loaded when an app first sends (it costs start time otherwise).
      producer = import('@azure/event-hubs').then(({ EventHubProducerClient }) => {
        const options = { retryOptions: sdkRetryOptions(this.#retry) };
        return 'connection' in target
          ? new EventHubProducerClient(target.connection, target.hub, options)
          : new EventHubProducerClient(target.namespace, target.hub, appCredential(), options);
      });
      this.#producers.set(key, producer);
    }
    return producer;
  }

  /** Sends a function's value as its events, in as few batches as the hub's message size allows. */
  async send(binding: BindingInfo, data: RpcTypedData, settings: Settings): Promise<void> {
    const bodies = eventBodies(data);
    if (bodies.length === 0) return;
    const producer = await this.#producer(settings, binding);
    // The .NET client fails with its last try's error; the JS SDK's retries end in an AggregateError
    // without a message of its own, which would leave the run's failure line empty.
    await sendAll(producer, bodies).catch((error: Error) => {
      throw error.message ? error : new Error(eventHubsErrorText(error), { cause: error });
    });
  }

  async close(): Promise<void> {
    const producers = [...this.#producers.values()];
    this.#producers.clear();
    await Promise.allSettled(producers.map(async (producer) => (await producer).close()));
  }
}

/** The events in as few batches as the hub's message size allows, as EventHubAsyncCollector sends them. */
async function sendAll(producer: EventHubProducerClient, bodies: Buffer[]): Promise<void> {
  let batch = await producer.createBatch();
  for (const body of bodies) {
    if (batch.tryAdd({ body })) continue;
    if (batch.count > 0) {
      await producer.sendBatch(batch);
      batch = await producer.createBatch();
      if (batch.tryAdd({ body })) continue;
    }
    throw new Error(
      `Event is too large. Event is approximately ${body.length}b and max size is ${batch.maxSizeInBytes}b`,
    );
  }
  await producer.sendBatch(batch);
}
