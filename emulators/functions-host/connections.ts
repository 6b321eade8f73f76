/** Named connections resolved from app settings, as the Functions extensions resolve them. */
import { createRequire } from 'node:module';
import type { CosmosClient } from '@azure/cosmos';
import type { DefaultAzureCredential } from '@azure/identity';
import { type BlobClient, type BlobDownloadResponseParsed, BlobServiceClient } from '@azure/storage-blob';
import type { BindingInfo } from './core-api.ts';

export type Settings = Record<string, string | undefined>;

/**
 * The value of a connection setting: `<name>`, then `AzureWebJobs<name>`; an omitted name means
 * `AzureWebJobsStorage`. Identity-based connections are the `<name>__*` settings.
 */
export function connectionSetting(settings: Settings, name: string | undefined): string | undefined {
  const key = name || 'AzureWebJobsStorage';
  return settings[key] || settings[`AzureWebJobs${key}`];
}

/** True when identity settings (`<name>__…`, names in any case) describe connection `name`. */
export function hasIdentitySettings(settings: Settings, name: string): boolean {
  const prefix = `${name}__`.toLowerCase();
  return Object.keys(settings).some((key) => key.toLowerCase().startsWith(prefix));
}

const requireModule = createRequire(import.meta.url);
let credential: DefaultAzureCredential | undefined;

/**
 * The app's identity for identity-based connections (`<name>__serviceUri` …). @azure/identity is loaded
 * on first use only: a quarter of a second of start time that key-based apps do not pay.
 */
export function appCredential(): DefaultAzureCredential {
  const identity = requireModule('@azure/identity') as typeof import('@azure/identity');
  credential ??= new identity.DefaultAzureCredential();
  return credential;
}

/**
 * The WebJobs host's storage clients retry as .NET's Azure.Storage does by default: 3 retries,
 * exponential from 0.8 s (the JS SDK's formula waits 0, 0.8, 2.4 s where .NET's waits 0.8, 1.6, 3.2 s
 * ±20 %: no option gives .NET's). The JS SDK's own default (4 s apart) would hide an outage for ~30 s.
 */
const HOST_STORAGE_RETRIES = { maxTries: 4, retryDelayInMs: 800, maxRetryDelayInMs: 60_000 };

const clients = new Map<string, BlobServiceClient>();

/** A blob service client for a connection (connection string, or `<name>__blobServiceUri` with an identity). */
export function blobService(settings: Settings, name: string | undefined): BlobServiceClient {
  const key = name || 'AzureWebJobsStorage';
  const value = connectionSetting(settings, key);
  const serviceUri = settings[`${key}__blobServiceUri`] ?? settings[`${key}__serviceUri`];
  const cacheKey = value ?? serviceUri ?? '';
  let client = clients.get(cacheKey);
  if (client) return client;
  if (value) client = BlobServiceClient.fromConnectionString(value, { retryOptions: HOST_STORAGE_RETRIES });
  else if (serviceUri)
    client = new BlobServiceClient(serviceUri, appCredential(), { retryOptions: HOST_STORAGE_RETRIES });
  else throw new Error(`storage connection '${key}' is not configured: set the app setting ${key}`);
  clients.set(cacheKey, client);
  return client;
}

/** `AccountEndpoint=…;AccountKey=…;` → its two parts. */
function parseCosmosConnection(connection: string): { endpoint: string; key: string } {
  const parts = Object.fromEntries(
    connection.split(';').flatMap((part) => {
      const at = part.indexOf('=');
      return at > 0 ? [[part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim()]] : [];
    }),
  );
  if (!parts.accountendpoint || !parts.accountkey)
    throw new Error('a Cosmos DB connection string needs AccountEndpoint and AccountKey');
  return { endpoint: parts.accountendpoint, key: parts.accountkey };
}

/**
 * A new Cosmos DB client for a connection: its connection string, or `<name>__accountEndpoint` with the
 * app's identity. The SDK is loaded on first use (apps without Cosmos bindings never pay for it).
 */
export async function newCosmosClient(
  settings: Settings,
  name: string,
): Promise<{ client: CosmosClient; endpoint: string }> {
  const { CosmosClient } = await import('@azure/cosmos');
  const connection = connectionSetting(settings, name);
  const connectionPolicy = { enableEndpointDiscovery: false };
  if (connection) {
    const { endpoint, key } = parseCosmosConnection(connection);
    return { client: new CosmosClient({ endpoint, key, connectionPolicy }), endpoint };
  }
  const endpoint = settings[`${name}__accountEndpoint`];
  if (!endpoint)
    throw new Error(`Cosmos DB connection '${name}' is not configured: set the app setting ${name}`);
  return {
    client: new CosmosClient({ endpoint, aadCredentials: appCredential(), connectionPolicy }),
    endpoint,
  };
}

/**
 * A database's or container's `createIfNotExists` (`create`) as the extension's .NET SDK does it: both
 * SDKs read, then create; when another caller creates it in between (two functions starting on one
 * lease container), the JS SDK fails with 409 where the .NET one reads it again. So here: run it again,
 * and its read finds it.
 */
export async function createdOrFound<T>(create: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (error) {
    // @azure/cosmos errors carry the status as `code`.
    if ((error as { code?: unknown }).code !== 409) throw error;
    return create();
  }
}

const cosmosClients = new Map<string, Promise<CosmosClient>>();

/** One shared client per connection, for bindings (a trigger makes, and disposes, its own). */
export function cosmosClient(settings: Settings, name: string): Promise<CosmosClient> {
  const key = connectionSetting(settings, name) ?? settings[`${name}__accountEndpoint`] ?? name;
  let client = cosmosClients.get(key);
  if (!client) {
    client = newCosmosClient(settings, name).then(({ client }) => client);
    // A failed creation (a missing setting) is not cached: the next run says so again.
    client.catch(() => cosmosClients.delete(key));
    cosmosClients.set(key, client);
  }
  return client;
}

/**
 * Resolves `%SettingName%` in a binding property, as the host does for every binding attribute, with
 * WebJobs' words (NameResolverExtensions.ResolveWholeString) for a setting that is not set.
 */
export function resolveSettingReferences(value: string, settings: Settings): string {
  return value.replace(/%([^%]+)%/g, (_, name: string) => {
    const resolved = settings[name];
    if (resolved === undefined) throw new Error(`'%${name}%' does not resolve to a value.`);
    return resolved;
  });
}

/**
 * The hub and how to reach it, as the extension's EventHubClientFactory resolves them for a trigger
 * (`in`) or an output (`out`): the connection string, else `<name>__fullyQualifiedNamespace` with the
 * app's identity, with its words when neither is there or the binding names no connection; a connection string's `EntityPath` wins over `eventHubName` (where the JS SDK would refuse two
 * different names).
 */
export function eventHubConnection(
  settings: Settings,
  binding: BindingInfo,
): { connection: string; hub: string } | { namespace: string; hub: string } {
  const name = String(binding.connection ?? '');
  const connection = connectionSetting(settings, name);
  const hub = resolveSettingReferences(String(binding.eventHubName ?? ''), settings);
  // Without a connection name the extension looks for no setting (AzureWebJobsStorage is not its default).
  if (!name)
    throw new Error(`No event hub ${binding.direction === 'out' ? 'sender' : 'receiver'} named ${hub}`);
  if (connection) {
    const entityPath = /(?:^|;)\s*EntityPath\s*=\s*([^;]*)/i.exec(connection)?.[1]?.trim();
    return { connection, hub: entityPath || hub };
  }
  const namespace = settings[`${name}__fullyQualifiedNamespace`];
  if (namespace) return { namespace, hub };
  if (hasIdentitySettings(settings, name))
    throw new Error(
      "Connection should have an 'fullyQualifiedNamespace' property or be a string representing a connection string.",
    );
  throw new Error(
    `EventHub account connection string with name '${name}' does not exist in the settings. Make sure that it is a defined App Setting.`,
  );
}

/**
 * What an Event Hubs SDK error says: its retries end in an AggregateError of every try, and a refused
 * connection is one of an error per address, neither with a message of its own; the last try's then.
 */
export function eventHubsErrorText(error: Error): string {
  const tries = (error as Partial<AggregateError>).errors as Error[] | undefined;
  return error.message || tries?.at(-1)?.message || (error as { code?: string }).code || error.name;
}

/**
 * A blob's content, ETag and properties from one download (so they always belong to the same version).
 */
export async function downloadBlob(
  blob: BlobClient,
): Promise<{ content: Buffer; etag: string; properties: BlobDownloadResponseParsed }> {
  const response = await blob.download();
  const chunks: Buffer[] = [];
  for await (const chunk of response.readableStreamBody as AsyncIterable<Buffer>) chunks.push(chunk);
  return { content: Buffer.concat(chunks), etag: response.etag ?? '', properties: response };
}

/** True when a storage call failed because the blob or container does not exist. */
export const isNotFound = (error: unknown) => (error as { statusCode?: number }).statusCode === 404;
