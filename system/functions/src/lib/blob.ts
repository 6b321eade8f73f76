/** Blob storage by connection-string setting: one client per connection and process. */
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { requiredSetting } from './settings.ts';

const services = new Map<string, BlobServiceClient>();
const created = new Set<string>();

/** Throws MissingSettingError when the connection setting is missing or empty. */
export function blobContainer(connectionSetting: string, name: string): ContainerClient {
  const connection = requiredSetting(connectionSetting);
  let service = services.get(connection);
  if (!service) {
    service = BlobServiceClient.fromConnectionString(connection);
    services.set(connection, service);
  }
  return service.getContainerClient(name);
}

/** Creates the container if missing, once per process (later calls skip the round trip). */
export async function ensureContainer(container: ContainerClient): Promise<ContainerClient> {
  if (!created.has(container.url)) {
    await container.createIfNotExists();
    created.add(container.url);
  }
  return container;
}
