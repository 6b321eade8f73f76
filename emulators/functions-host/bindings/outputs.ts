/**
 * Output bindings the host writes after a successful invocation: blob (`storageBlob` output), Event
 * Grid (`eventGrid` output), Cosmos DB (`cosmosDB` output) and Event Hubs (`eventHub` output). The HTTP
 * output is the HTTP layer's; other binding types fail the invocation with a clear message rather than
 * silently dropping data.
 */
import type { StackClock } from '../../core/clock.ts';
import { blobService, type Settings } from '../connections.ts';
import type { BindingInfo, RegisteredFunction, RpcInvocationResponse, RpcTypedData } from '../core-api.ts';
import type { ClientRetryOptions } from '../eventhub-retry.ts';
import { perFunction } from '../host.ts';
import type { BindingData, OutputWriter } from '../invoke.ts';
import { writeCosmos } from './cosmos-output.ts';
import { splitBlobPath, typedDataBytes } from './data.ts';
import { publishEvents } from './eventgrid.ts';
import { EventHubProducers } from './eventhub-output.ts';
import { propertyResolver } from './expressions.ts';
import { INPUT_TYPES } from './inputs.ts';

function outputValue(name: string, response: RpcInvocationResponse): RpcTypedData | undefined {
  const data =
    name === '$return' ? response.returnValue : response.outputData?.find((o) => o.name === name)?.data;
  return data ?? undefined;
}

const createdContainers = new Set<string>();

async function writeBlob(binding: BindingInfo, data: RpcTypedData, settings: Settings, path: string) {
  const service = blobService(settings, binding.connection as string | undefined);
  const { container, blob } = splitBlobPath(path);
  const containerClient = service.getContainerClient(container);
  // The binding creates a missing container, as the storage extension does.
  if (!createdContainers.has(containerClient.url)) {
    await containerClient.createIfNotExists();
    createdContainers.add(containerClient.url);
  }
  const content = typedDataBytes(data);
  await containerClient.getBlockBlobClient(blob).upload(content, content.length);
}

/**
 * Bindings of `fn` this host does not serve: outputs other than http, blob, eventGrid, cosmosDB,
 * eventHub; inputs other than blob, cosmosDB.
 */
export function unsupportedBindings(fn: RegisteredFunction): string[] {
  return Object.entries(fn.bindings)
    .filter(([, binding]) =>
      binding.direction === 'out'
        ? !['http', 'blob', 'eventgrid', 'cosmosdb', 'eventhub'].includes(binding.type.toLowerCase())
        : !/trigger$/i.test(binding.type) && !INPUT_TYPES.includes(binding.type.toLowerCase()),
    )
    .map(([name, binding]) => `${name} (${binding.type}, ${binding.direction})`);
}

/** A function's output bindings other than HTTP (the HTTP layer's). */
const outputsOf = perFunction((fn) =>
  Object.entries(fn.bindings).filter(
    ([, binding]) => binding.direction === 'out' && binding.type.toLowerCase() !== 'http',
  ),
);

/**
 * Writes outputs; once `stopping` (the host's stop) is aborted, the Event Grid output retries no more.
 * The Event Hubs output's clients retry as `eventHubsRetry` (host.json's clientRetryOptions) says.
 * `close` ends the writer's Event Hubs producers, once no invocation runs any more.
 */
export function outputWriter(
  settings: Settings,
  clock: StackClock,
  stopping: AbortSignal,
  eventHubsRetry: ClientRetryOptions,
): OutputWriter & { close(): Promise<void> } {
  const eventHubs = new EventHubProducers(eventHubsRetry);
  const write = async (fn: RegisteredFunction, response: RpcInvocationResponse, bindingData: BindingData) => {
    for (const [name, binding] of outputsOf(fn)) {
      const type = binding.type.toLowerCase();
      const data = outputValue(name, response);
      if (data === undefined) continue;
      const resolve = propertyResolver(bindingData, settings, () => clock.date());
      if (type === 'blob') {
        await writeBlob(binding, data, settings, resolve(binding.path) ?? '');
      } else if (type === 'eventgrid') {
        await publishEvents(binding, data, settings, stopping);
      } else if (type === 'cosmosdb') {
        await writeCosmos(binding, data, settings, resolve);
      } else if (type === 'eventhub') {
        await eventHubs.send(binding, data, settings);
      } else {
        throw new Error(`output binding type '${binding.type}' (${name}) is not supported by this host`);
      }
    }
  };
  return Object.assign(write, { close: () => eventHubs.close() });
}
