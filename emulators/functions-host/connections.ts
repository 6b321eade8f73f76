/** Named connections resolved from app settings, as the Functions extensions resolve them. */
import { createRequire } from 'node:module';
import type { DefaultAzureCredential } from '@azure/identity';
import { type BlobClient, BlobServiceClient } from '@azure/storage-blob';

export type Settings = Record<string, string | undefined>;

/**
 * The value of a connection setting: `<name>`, then `AzureWebJobs<name>`; an omitted name means
 * `AzureWebJobsStorage`. Identity-based connections are the `<name>__*` settings.
 */
export function connectionSetting(settings: Settings, name: string | undefined): string | undefined {
  const key = name || 'AzureWebJobsStorage';
  return settings[key] || settings[`AzureWebJobs${key}`];
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

const clients = new Map<string, BlobServiceClient>();

/** A blob service client for a connection (connection string, or `<name>__blobServiceUri` with an identity). */
export function blobService(settings: Settings, name: string | undefined): BlobServiceClient {
  const key = name || 'AzureWebJobsStorage';
  const value = connectionSetting(settings, key);
  const serviceUri = settings[`${key}__blobServiceUri`] ?? settings[`${key}__serviceUri`];
  const cacheKey = value ?? serviceUri ?? '';
  let client = clients.get(cacheKey);
  if (client) return client;
  if (value) client = BlobServiceClient.fromConnectionString(value);
  else if (serviceUri) client = new BlobServiceClient(serviceUri, appCredential());
  else throw new Error(`storage connection '${key}' is not configured: set the app setting ${key}`);
  clients.set(cacheKey, client);
  return client;
}

/** Resolves `%SettingName%` in a binding property, as the host does for every binding attribute. */
export function resolveSettingReferences(value: string, settings: Settings): string {
  return value.replace(/%([^%]+)%/g, (_, name: string) => {
    const resolved = settings[name];
    if (resolved === undefined) throw new Error(`app setting ${name} (referenced as %${name}%) is not set`);
    return resolved;
  });
}

/** A blob's content and ETag from one download (so the two always belong to the same version). */
export async function downloadBlob(blob: BlobClient): Promise<{ content: Buffer; etag: string }> {
  const response = await blob.download();
  const chunks: Buffer[] = [];
  for await (const chunk of response.readableStreamBody as AsyncIterable<Buffer>) chunks.push(chunk);
  return { content: Buffer.concat(chunks), etag: response.etag ?? '' };
}

/** True when a storage call failed because the blob or container does not exist. */
export const isNotFound = (error: unknown) => (error as { statusCode?: number }).statusCode === 404;
