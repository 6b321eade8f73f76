/**
 * Where the host keeps its keys, as the runtime's secrets repositories do: blobs `<hostId>/host.json`
 * and `<hostId>/<function>.json` in the `azure-webjobs-secrets` container of AzureWebJobsStorage
 * (`AzureWebJobsSecretStorageType=blob`, Azure's default), or files (`files`) in the component's state.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BlobServiceClient, ContainerClient } from '@azure/storage-blob';
import { writeFileAtomic } from '../core/files.ts';
import { downloadBlob, isNotFound } from './connections.ts';

export interface SecretsStore {
  /** The document for `name` (`host` or a lower-cased function name), or undefined. */
  read(name: string): Promise<string | undefined>;
  write(name: string, content: string): Promise<void>;
}

export class BlobSecretsStore implements SecretsStore {
  #container: ContainerClient;
  #ready: Promise<unknown> | undefined;
  /** ETags of what we last read or wrote: writes are conditional, like the runtime's. */
  #etags = new Map<string, string>();

  constructor(
    service: BlobServiceClient,
    private readonly hostId: string,
  ) {
    this.#container = service.getContainerClient('azure-webjobs-secrets');
  }

  #blob(name: string) {
    this.#ready ??= this.#container.createIfNotExists().catch((error) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#container.getBlockBlobClient(`${this.hostId}/${name}.json`);
  }

  async read(name: string): Promise<string | undefined> {
    const blob = this.#blob(name);
    await this.#ready;
    try {
      const { content, etag } = await downloadBlob(blob);
      this.#etags.set(name, etag);
      return content.toString('utf8');
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async write(name: string, content: string): Promise<void> {
    const blob = this.#blob(name);
    await this.#ready;
    const etag = this.#etags.get(name);
    const { etag: written } = await blob.upload(content, Buffer.byteLength(content), {
      conditions: etag ? { ifMatch: etag } : { ifNoneMatch: '*' },
      blobHTTPHeaders: { blobContentType: 'application/json' },
    });
    if (written) this.#etags.set(name, written);
  }
}

/** `files`: a folder of the component's state, or memory when the stack runs without persistence. */
export class FileSecretsStore implements SecretsStore {
  #memory = new Map<string, string>();

  constructor(private readonly dir: string | undefined) {}

  async read(name: string): Promise<string | undefined> {
    if (!this.dir) return this.#memory.get(name);
    const path = join(this.dir, `${name}.json`);
    return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  }

  async write(name: string, content: string): Promise<void> {
    if (this.dir) writeFileAtomic(join(this.dir, `${name}.json`), content);
    else this.#memory.set(name, content);
  }
}
