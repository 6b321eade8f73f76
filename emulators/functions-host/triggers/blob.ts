/**
 * blobTrigger by container scan (the runtime's `LogsAndContainerScan` source without the logs part):
 * the container is listed on a short interval; each blob version matching the path pattern runs once,
 * recorded as the runtime does in `azure-webjobs-hosts/blobreceipts/<hostId>/Host.Functions.<name>/<etag>/<container>/<blob>`
 * (metadata `Incomplete=true` while it runs), so a restart never repeats a finished version.
 *
 * Poison handling: the runtime counts tries on a queue message and, past `maxDequeueCount` (5), moves it
 * to the `webjobs-blobtrigger-poison` queue. Azurite runs only the blob service here, so the count is
 * kept in the receipt's metadata (`Tries`) and the poison message — the runtime's JSON — is written as a
 * blob in a `webjobs-blobtrigger-poison` container; the receipt is then completed.
 */
import { randomUUID } from 'node:crypto';
import type { BlobServiceClient, ContainerClient } from '@azure/storage-blob';
import { splitBlobPath } from '../bindings/outputs.ts';
import { blobService, downloadBlob, isNotFound, resolveSettingReferences } from '../connections.ts';
import type { RegisteredFunction, RpcTypedData } from '../core-api.ts';
import type { Host, Listener, TriggerBinding, TriggerKind } from '../host.ts';
import type { TriggerInput } from '../invoke.ts';
import { Outage } from '../listeners.ts';
import { compilePattern } from './blob-path.ts';

/** How often containers are listed for new or changed blobs. */
export const SCAN_INTERVAL_MS = 1000;
const POISON_CONTAINER = 'webjobs-blobtrigger-poison';

interface BlobVersion {
  container: string;
  name: string;
  etag: string;
}

/** ETags as HTTP headers carry them (and receipts are named): quoted. Listings give them bare. */
const quoted = (etag: string) => (etag.startsWith('"') ? etag : `"${etag}"`);

const typed = (value: unknown): RpcTypedData =>
  typeof value === 'string' ? { string: value } : { json: JSON.stringify(value ?? null) };

/** The invocation input for one blob: its content, and the runtime's trigger metadata and binding data. */
async function blobInput(
  service: BlobServiceClient,
  trigger: TriggerBinding,
  version: { container: string; name: string },
  params: Record<string, string>,
  reason: string,
): Promise<{ input: TriggerInput; etag: string }> {
  const client = service.getContainerClient(version.container).getBlobClient(version.name);
  const { content, etag: raw } = await downloadBlob(client);
  const etag = quoted(raw);
  const properties = await client.getProperties();
  const metadata = {
    BlobTrigger: `${version.container}/${version.name}`,
    Uri: client.url,
    Properties: {
      ContentType: properties.contentType,
      Length: content.length,
      ETag: etag,
      LastModified: properties.lastModified,
    },
    Metadata: properties.metadata ?? {},
    ...params,
  };
  const data: RpcTypedData =
    trigger.dataType === 'string' ? { string: content.toString('utf8') } : { bytes: content };
  const input: TriggerInput = {
    inputData: [{ name: trigger.name, data }],
    triggerMetadata: Object.fromEntries(Object.entries(metadata).map(([key, value]) => [key, typed(value)])),
    reason,
    bindingData: {
      ...params,
      blobTrigger: metadata.BlobTrigger,
      uri: metadata.Uri,
      metadata: metadata.Metadata,
    },
  };
  return { input, etag };
}

class Receipts {
  readonly #container: ContainerClient;
  #created: Promise<unknown> | undefined;

  constructor(host: Host, fn: RegisteredFunction) {
    this.#container = blobService(host.settings, undefined).getContainerClient('azure-webjobs-hosts');
    this.prefix = `blobreceipts/${host.hostId}/Host.Functions.${fn.name}/`;
  }

  readonly prefix: string;

  blob(version: BlobVersion) {
    return this.#container.getBlockBlobClient(
      `${this.prefix}${version.etag}/${version.container}/${version.name}`,
    );
  }

  /** The receipt's state: undefined when there is none. */
  async read(version: BlobVersion): Promise<{ complete: boolean; tries: number } | undefined> {
    try {
      const { metadata = {} } = await this.blob(version).getProperties();
      return { complete: metadata.incomplete !== 'true', tries: Number(metadata.tries ?? 0) };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async write(version: BlobVersion, metadata: Record<string, string>): Promise<void> {
    this.#created ??= this.#container.createIfNotExists();
    await this.#created;
    await this.blob(version).upload('', 0, { metadata });
  }
}

async function listen(host: Host, fn: RegisteredFunction, trigger: TriggerBinding): Promise<Listener> {
  const path = resolveSettingReferences(String(trigger.path ?? ''), host.settings);
  const { container, blob: pattern } = splitBlobPath(path);
  const match = compilePattern(pattern);
  const service = blobService(host.settings, trigger.connection as string | undefined);
  const containerClient = service.getContainerClient(container);
  await containerClient.createIfNotExists(); // the listener creates a missing container, as the runtime does
  const receipts = new Receipts(host, fn);
  const finished = new Set<string>();

  let stopped = false;
  const handle = async (version: BlobVersion, params: Record<string, string>) => {
    const receipt = await receipts.read(version);
    if (receipt?.complete) return finished.add(`${version.etag}/${version.name}`);
    const tries = (receipt?.tries ?? 0) + 1;
    await receipts.write(version, { Incomplete: 'true', Tries: String(tries - 1) });
    const reason = `New blob detected(LogsAndContainerScan): ${container}/${version.name}`;
    const { input, etag } = await blobInput(service, trigger, version, params, reason);
    if (etag !== version.etag) return; // changed since listing: the next scan sees the new version
    const outcome = await host.invoker.invoke(fn, input);
    if (outcome.succeeded) {
      await receipts.write(version, {});
    } else if (tries >= host.config.maxDequeueCount) {
      await poison(host, fn, version);
      await receipts.write(version, { Poisoned: 'true' });
    } else {
      await receipts.write(version, { Incomplete: 'true', Tries: String(tries) });
      return;
    }
    finished.add(`${version.etag}/${version.name}`);
  };

  const scan = async () => {
    for await (const item of containerClient.listBlobsFlat({ prefix: match.prefix })) {
      if (stopped) return;
      const params = match.match(item.name);
      const etag = quoted(item.properties.etag ?? '');
      if (!params || finished.has(`${etag}/${item.name}`)) continue;
      // One blob's failure to be read or recorded must not hold up the others; it is retried next scan.
      await handle({ container, name: item.name, etag }, params).catch((error: Error) =>
        host.logs.host(
          'error',
          `blob trigger 'Functions.${fn.name}' on ${container}/${item.name}: ${error.message}`,
        ),
      );
    }
  };

  // A failed scan (storage down or restarting) is logged and retried with backoff; the receipts say
  // what already ran, so nothing is lost or run twice when it is back.
  const outage = new Outage({
    down: (error, failures, retryInMs) =>
      host.logs.host(
        'error',
        `blob scan for 'Functions.${fn.name}' failed: ${error.message} (retry ${failures} in ${Math.round(retryInMs / 1000)} s)`,
      ),
    up: (failures) =>
      host.logs.host(
        'information',
        `blob scan for 'Functions.${fn.name}' succeeded again after ${failures} failed scan(s)`,
      ),
  });
  let scanning: Promise<void> = Promise.resolve();
  const tick = () => {
    let delay = SCAN_INTERVAL_MS;
    scanning = scan()
      .then(
        () => outage.recovered(),
        (error: Error) => {
          delay = outage.failed(error);
        },
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, delay);
      });
  };
  let timer: NodeJS.Timeout | undefined;
  tick();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await scanning;
    },
  };
}

async function poison(host: Host, fn: RegisteredFunction, version: BlobVersion) {
  const message = JSON.stringify({
    Type: 'BlobTrigger',
    FunctionId: `Host.Functions.${fn.name}`,
    BlobType: 'BlockBlob',
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
    `Message has reached MaxDequeueCount of ${host.config.maxDequeueCount}. Moving message to '${POISON_CONTAINER}': ${version.container}/${version.name}`,
  );
}

export const blobTrigger: TriggerKind = {
  type: 'blobTrigger',
  listen,
  /** The admin input is the blob's path (`container/name`), as for the runtime. */
  async adminInput(host, _fn, trigger, input) {
    const service = blobService(host.settings, trigger.connection as string | undefined);
    const { container, blob } = splitBlobPath(input);
    const pattern = splitBlobPath(resolveSettingReferences(String(trigger.path ?? ''), host.settings)).blob;
    const params = compilePattern(pattern).match(blob) ?? {};
    const reason = 'This function was programmatically called via the host APIs.';
    return (await blobInput(service, trigger, { container, name: blob }, params, reason)).input;
  },
};
