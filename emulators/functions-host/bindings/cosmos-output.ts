/**
 * The Cosmos DB output binding (`output.cosmosDB`), as the extension v4's collector writes it
 * (CosmosDBAsyncCollector): each document (an array is its documents) is upserted, so one with the id of
 * an existing document replaces it; no id is generated (the extension stopped doing so in 4.x), so a
 * document without one fails the invocation with Cosmos DB's answer. A missing container is created
 * with `createIfNotExists` (its database too, partitioned by `partitionKey`), otherwise the run fails
 * with the extension's words.
 */
import type { Container } from '@azure/cosmos';
import { cosmosClient, createdOrFound, type Settings } from '../connections.ts';
import type { BindingInfo, RpcTypedData } from '../core-api.ts';
import { typedDataBytes } from './data.ts';

/** The documents a function set: its JSON value, one document or an array of them. */
function documentsOf(data: RpcTypedData): Record<string, unknown>[] {
  const value: unknown = JSON.parse(typedDataBytes(data).toString('utf8'));
  return (Array.isArray(value) ? value : [value]) as Record<string, unknown>[];
}

async function upsertAll(container: Container, documents: Record<string, unknown>[]) {
  for (const document of documents)
    await container.items.upsert(document, { disableAutomaticIdGeneration: true });
}

export async function writeCosmos(
  binding: BindingInfo,
  data: RpcTypedData,
  settings: Settings,
  resolve: (template: unknown) => string | undefined,
): Promise<void> {
  const client = await cosmosClient(settings, String(binding.connection ?? ''));
  const databaseName = resolve(binding.databaseName) ?? '';
  const containerName = resolve(binding.containerName ?? binding.collectionName) ?? '';
  const container = client.database(databaseName).container(containerName);
  const documents = documentsOf(data);
  try {
    await upsertAll(container, documents);
  } catch (error) {
    // @azure/cosmos errors carry the status as `code`.
    if ((error as { code?: unknown }).code !== 404) throw error;
    if (binding.createIfNotExists !== true)
      throw new Error(
        `The container '${containerName}' (in database '${databaseName}') does not exist. To automatically create the container, set 'CreateIfNotExists' to 'true'.`,
      );
    const { database } = await createdOrFound(() => client.databases.createIfNotExists({ id: databaseName }));
    const partitionKey = resolve(binding.partitionKey);
    const throughput =
      Number(binding.containerThroughput) > 0 ? Number(binding.containerThroughput) : undefined;
    await createdOrFound(() =>
      database.containers.createIfNotExists({ id: containerName, partitionKey, throughput }),
    );
    await upsertAll(container, documents);
  }
}
