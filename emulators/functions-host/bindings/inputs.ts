/**
 * Input bindings the host reads before an invocation and hands to the library as input data, which
 * puts them in `context.extraInputs`: blob (`input.storageBlob`) and Cosmos DB (`input.cosmosDB`).
 * A missing blob or document is delivered as the host delivers a null value (empty typed data), which
 * the library turns into `undefined`. Other input types fail the invocation with a clear message.
 */
import type { StackClock } from '../../core/clock.ts';
import { blobService, cosmosClient, downloadBlob, isNotFound, type Settings } from '../connections.ts';
import type { BindingInfo, RegisteredFunction, RpcParameterBinding, RpcTypedData } from '../core-api.ts';
import { perFunction } from '../host.ts';
import type { BindingData, InputReader } from '../invoke.ts';
import { splitBlobPath } from './data.ts';
import { propertyResolver, sqlQuery } from './expressions.ts';

/** Input binding types this host reads (lower case). */
export const INPUT_TYPES = ['blob', 'cosmosdb'];

/** What the host sends for a null value (azure-functions-host's `ToRpc(null)`): no data at all. */
const NULL: RpcTypedData = {};

async function readBlob(binding: BindingInfo, settings: Settings, path: string): Promise<RpcTypedData> {
  const { container, blob } = splitBlobPath(path);
  const client = blobService(settings, binding.connection as string | undefined)
    .getContainerClient(container)
    .getBlobClient(blob);
  try {
    // One request, so the content is one version's even while the blob is rewritten.
    const { content } = await downloadBlob(client);
    return binding.dataType === 'string' ? { string: content.toString('utf8') } : { bytes: content };
  } catch (error) {
    if (isNotFound(error)) return NULL;
    throw error;
  }
}

async function readCosmos(
  binding: BindingInfo,
  settings: Settings,
  resolve: (template: unknown) => string | undefined,
  bindingData: Record<string, unknown>,
): Promise<RpcTypedData> {
  const client = await cosmosClient(settings, String(binding.connection ?? ''));
  const container = client
    .database(resolve(binding.databaseName) ?? '')
    .container(resolve(binding.containerName ?? binding.collectionName) ?? '');
  const id = resolve(binding.id);
  const partitionKey = resolve(binding.partitionKey);
  if (id !== undefined) {
    const { resource } = await container.item(id, partitionKey).read();
    return resource === undefined ? NULL : { json: JSON.stringify(resource) };
  }
  // No id: the query's documents, or (without a query) the whole container, as the extension does.
  const query =
    typeof binding.sqlQuery === 'string'
      ? sqlQuery(binding.sqlQuery, bindingData, settings)
      : { query: 'SELECT * FROM c', parameters: [] };
  const { resources } = await container.items.query(query, { partitionKey }).fetchAll();
  return { json: JSON.stringify(resources) };
}

/** A function's input bindings, its trigger aside. */
const inputsOf = perFunction((fn) =>
  Object.entries(fn.bindings).filter(
    ([, binding]) => binding.direction === 'in' && !/trigger$/i.test(binding.type),
  ),
);

export function inputReader(settings: Settings, clock: StackClock): InputReader {
  return async (fn: RegisteredFunction, bindingData: BindingData) => {
    const inputs: RpcParameterBinding[] = [];
    for (const [name, binding] of inputsOf(fn)) {
      const resolve = propertyResolver(bindingData, settings, () => clock.date());
      const type = binding.type.toLowerCase();
      let data: RpcTypedData;
      if (type === 'blob') data = await readBlob(binding, settings, resolve(binding.path) ?? '');
      else if (type === 'cosmosdb') data = await readCosmos(binding, settings, resolve, bindingData());
      else throw new Error(`input binding type '${binding.type}' (${name}) is not supported by this host`);
      inputs.push({ name, data });
    }
    return inputs;
  };
}
