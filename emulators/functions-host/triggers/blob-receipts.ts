/**
 * Blob receipts, as the runtime keeps them: one blob per function and blob version,
 * `azure-webjobs-hosts/blobreceipts/<hostId>/Host.Functions.<name>/<etag>/<container>/<blob>`, with
 * metadata `Incomplete=true` until the version has run. The runtime counts tries on a queue message;
 * Azurite runs only the blob service here, so the count is kept in the receipt's metadata (`Tries`, with
 * the message's `MessageId` and `InsertedOn`, which the trigger's details name),
 * and the runtime's poison message is written as a blob in a `webjobs-blobtrigger-poison` container.
 */
import { randomUUID } from 'node:crypto';
import type { ContainerClient } from '@azure/storage-blob';
import { blobService, isNotFound } from '../connections.ts';
import type { RegisteredFunction } from '../core-api.ts';
import type { Host } from '../host.ts';

export const HOSTS_CONTAINER = 'azure-webjobs-hosts';
const POISON_CONTAINER = 'webjobs-blobtrigger-poison';

export interface BlobVersion {
  container: string;
  name: string;
  /** Quoted, as HTTP headers carry it and receipts are named. */
  etag: string;
}

export interface ReceiptState {
  complete: boolean;
  /** Tries begun, this one included (the queue message's dequeue count): counted before the run. */
  tries: number;
  /** The queue message this receipt stands for: its id and insertion time (whole seconds), the same for every try. */
  message: { id: string; insertedOn: Date };
  /** Records the version's new state: `{}` once it ran, `Poisoned` once it never will. */
  write(metadata: Record<string, string>): Promise<void>;
}

type Message = ReceiptState['message'];
/** Queue messages' times have whole seconds. */
const newMessage = (): Message => ({
  id: randomUUID(),
  insertedOn: new Date(Math.floor(Date.now() / 1000) * 1000),
});

const isConflict = (error: unknown) => (error as { statusCode?: number }).statusCode === 409;

export class Receipts {
  readonly #container: ContainerClient;
  readonly #prefix: string;
  #created: Promise<unknown> | undefined;

  constructor(host: Host, fn: RegisteredFunction) {
    this.#container = blobService(host.settings, undefined).getContainerClient(HOSTS_CONTAINER);
    this.#prefix = `blobreceipts/${host.hostId}/Host.Functions.${fn.name}/`;
  }

  /**
   * Creates the incomplete receipt unless one exists (the runtime's TryCreate, If-None-Match: *), and
   * counts the try about to begin in it (`Tries`), as a queue counts a message's dequeues: a run that
   * ends the worker (a crash, a held event loop) is counted too. A new version costs one request. One
   * client serves the receipt's requests: building a blob client costs the SDK about as much CPU as a
   * request.
   */
  async claim(version: BlobVersion): Promise<ReceiptState> {
    this.#created ??= this.#container.createIfNotExists();
    await this.#created;
    const blob = this.#container.getBlockBlobClient(
      `${this.#prefix}${version.etag}/${version.container}/${version.name}`,
    );
    const write = async (metadata: Record<string, string>) => {
      await blob.upload('', 0, { metadata });
    };
    const begin = async (tries: number, message: Message, conditions?: { ifNoneMatch: string }) => {
      const metadata = {
        Incomplete: 'true',
        Tries: String(tries),
        MessageId: message.id,
        InsertedOn: message.insertedOn.toISOString(),
      };
      await blob.upload('', 0, { metadata, conditions });
      return { complete: false, tries, message, write };
    };
    try {
      return await begin(1, newMessage(), { ifNoneMatch: '*' });
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
    const done = { complete: true, tries: 0, message: newMessage(), write };
    let metadata: Record<string, string>;
    try {
      ({ metadata = {} } = await blob.getProperties());
    } catch (error) {
      // Deleted between the two calls: claim it again on the next try.
      if (isNotFound(error)) return { ...done, complete: false };
      throw error;
    }
    if (metadata.incomplete !== 'true') return done;
    // A receipt written before messages were recorded in it gets one now.
    const insertedOn = new Date(metadata.insertedon ?? Number.NaN);
    const message =
      metadata.messageid && !Number.isNaN(insertedOn.getTime())
        ? { id: metadata.messageid, insertedOn }
        : newMessage();
    return begin(Number(metadata.tries ?? 0) + 1, message);
  }
}

/**
 * Writes the runtime's poison message for `version`, read from `source` (its container). Its blob type
 * is the blob's own, as the extension names it (`AppendBlob`); asked for here, once, rather than kept
 * for every version found.
 */
export async function poison(
  host: Host,
  fn: RegisteredFunction,
  version: BlobVersion,
  source: ContainerClient,
) {
  const { blobType = 'BlockBlob' } = await source
    .getBlobClient(version.name)
    .getProperties()
    .catch((error) => {
      // Deleted since: the type of the blob the trigger saw is unknown.
      if (isNotFound(error)) return { blobType: undefined };
      throw error;
    });
  const message = JSON.stringify({
    Type: 'BlobTrigger',
    FunctionId: `Host.Functions.${fn.name}`,
    BlobType: blobType,
    ContainerName: version.container,
    BlobName: version.name,
    ETag: version.etag,
  });
  const container = blobService(host.settings, undefined).getContainerClient(POISON_CONTAINER);
  await container.createIfNotExists();
  await container.getBlockBlobClient(randomUUID()).upload(message, Buffer.byteLength(message));
  host.logs.invocation(
    fn.name,
    '',
    'error',
    `Message has reached MaxDequeueCount of ${host.config.blobs.poisonBlobThreshold}. Moving message to '${POISON_CONTAINER}': ${version.container}/${version.name}`,
  );
}
