/**
 * The TasksDB/Tasks container. With the setting `DocumentDbConnection__accountEndpoint` the app reaches
 * Cosmos DB with its managed identity (data-plane role, no key); otherwise with the connection string
 * kept in the vault secret `DocumentDbConnection`.
 */
import { type Container, CosmosClient } from '@azure/cosmos';
import { once } from './once.ts';
import { setting } from './settings.ts';
import { credential, documentDbConnectionSecret } from './vault.ts';

export const DATABASE = 'TasksDB';
export const CONTAINER = 'Tasks';

export const tasksContainer = once(async (): Promise<Container> => {
  const endpoint = setting('DocumentDbConnection__accountEndpoint');
  if (endpoint) {
    // Data-plane roles cannot create databases or containers: with an identity they must already
    // exist (they are deployed from system/topology.json).
    return new CosmosClient({ endpoint, aadCredentials: credential }).database(DATABASE).container(CONTAINER);
  }
  const cosmos = new CosmosClient(await documentDbConnectionSecret());
  const { database } = await cosmos.databases.createIfNotExists({ id: DATABASE });
  const { container } = await database.containers.createIfNotExists({
    id: CONTAINER,
    partitionKey: { paths: ['/id'] },
  });
  return container;
});
