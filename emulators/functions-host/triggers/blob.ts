/**
 * blobTrigger as the runtime's `LogsAndContainerScan` source runs it, with the store's blob events
 * (`blob-events.ts`, where the store has them) standing for its storage logs: events report new blob
 * versions at once; sweeps of the container (`blob-scan.ts`) find those written since the latest
 * scan, once after each subscription to the events and, while they are not connected, at the
 * runtime's pace. Each matching version runs once, as the runtime's blob trigger queue runs them, up
 * to `maxDegreeOfParallelism` at a time across all of the host's blob triggers (`RunSlots`), recorded
 * by a receipt (`blob-receipts.ts`) so that a restart never repeats a finished version. A failed run is
 * tried again when the host's blob trigger queue would dequeue its message again (`blob-queue.ts`), up
 * to `poisonBlobThreshold` (5) tries, then poisoned.
 */
import type { ContainerClient } from '@azure/storage-blob';
import { splitBlobPath } from '../bindings/data.ts';
import {
  blobService,
  connectionSetting,
  downloadBlob,
  hasIdentitySettings,
  isNotFound,
  resolveSettingReferences,
  type Settings,
} from '../connections.ts';
import type { RegisteredFunction, RpcTypedData } from '../core-api.ts';
import { type Host, IndexingError, type Listener, type TriggerBinding, type TriggerKind } from '../host.ts';
import type { TriggerInput } from '../invoke.ts';
import { Outage } from '../listeners.ts';
import { BlobEvents } from './blob-events.ts';
import { compilePattern, triggerPath } from './blob-path.ts';
import { blobTriggerQueue } from './blob-queue.ts';
import { type BlobVersion, poison, Receipts } from './blob-receipts.ts';
import { ContainerScan, type ListedBlob, PAGE_SIZE } from './blob-scan.ts';
import { runSlots } from './blob-slots.ts';

/** How often a container is swept when sweeping it is cheap. */
export const SCAN_INTERVAL_MS = 1000;
/**
 * The pause after a sweep per blob it listed: the runtime's listing budget, a page of `PAGE_SIZE` blobs
 * per container and 10 s polling interval, so that listing a large container keeps the storage, and this
 * host, no busier than the runtime keeps them (10,000 blobs: a sweep every 20 s). Counted in blobs
 * rather than timed, so that a busy machine does not slow the sweeps of small containers.
 */
const PAUSE_PER_BLOB_MS = 10_000 / PAGE_SIZE;

/** ETags as HTTP headers carry them (and receipts are named): quoted. Listings give them bare. */
const quoted = (etag: string) => (etag.startsWith('"') ? etag : `"${etag}"`);

/**
 * A time as the host's JSON (Newtonsoft's defaults) writes a .NET DateTimeOffset in UTC:
 * `2026-11-26T14:00:00+00:00`, with a fraction only where it is not zero.
 */
const jsonOffset = (date: Date | undefined) => date?.toISOString().replace(/\.?0*Z$/, '+00:00');

/** A time as the extension writes it in trigger details (`yyyy-MM-ddTHH:mm:ss.fffzzz`, UTC). */
const detailTime = (date: Date) => date.toISOString().replace(/Z$/, '+00:00');

const typed = (value: unknown): RpcTypedData =>
  typeof value === 'string' ? { string: value } : { json: JSON.stringify(value ?? null) };

/**
 * The blob's metadata with its names as they were set (`TaskId`), as the storage answers them and .NET
 * keeps them: Node's HTTP client lowers header names, so a download gives `taskid`. A listing keeps
 * them, so one is asked for when the blob has metadata (the version listed, else the lowered names).
 */
async function metadataOf(
  container: ContainerClient,
  name: string,
  etag: string,
  lowered: Record<string, string> | undefined,
): Promise<Record<string, string>> {
  if (!lowered || Object.keys(lowered).length === 0) return {};
  const listing = container.listBlobsFlat({ prefix: name, includeMetadata: true }).byPage({ maxPageSize: 1 });
  const { value: page } = await listing.next();
  const item = page?.segment.blobItems[0];
  return item?.name === name && quoted(item.properties.etag ?? '') === etag ? (item.metadata ?? {}) : lowered;
}

/** The invocation input for one blob: its content, and the runtime's trigger metadata and binding data. */
async function blobInput(
  container: ContainerClient,
  trigger: TriggerBinding,
  name: string,
  params: Record<string, string>,
  reason: string,
): Promise<{ input: TriggerInput; etag: string; created?: Date; lastModified?: Date }> {
  const client = container.getBlobClient(name);
  const { content, etag: raw, properties } = await downloadBlob(client);
  const etag = quoted(raw);
  const metadata = {
    BlobTrigger: `${container.containerName}/${name}`,
    Uri: client.url,
    // Some of the BlobProperties (Azure.Storage.Blobs) the extension binds, by their .NET names.
    Properties: {
      LastModified: jsonOffset(properties.lastModified),
      CreatedOn: jsonOffset(properties.createdOn),
      ContentLength: content.length,
      ContentType: properties.contentType,
      ETag: etag,
      ContentHash: properties.contentMD5 && Buffer.from(properties.contentMD5).toString('base64'),
    },
    Metadata: await metadataOf(container, name, etag, properties.metadata),
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
  return { input, etag, created: properties.createdOn, lastModified: properties.lastModified };
}

interface Found extends BlobVersion {
  lastModified: number;
  params: Record<string, string>;
}

const keyOf = (version: { etag: string; name: string }) => `${version.etag}/${version.name}`;

async function listen(host: Host, fn: RegisteredFunction, trigger: TriggerBinding): Promise<Listener> {
  const path = resolveSettingReferences(String(trigger.path ?? ''), host.settings);
  const { container, pattern } = triggerPath(path);
  const match = compilePattern(pattern);
  const service = blobService(host.settings, trigger.connection as string | undefined);
  const containerClient = service.getContainerClient(container);
  await containerClient.createIfNotExists(); // the listener creates a missing container, as the runtime does
  const receipts = new Receipts(host, fn);
  const scan = new ContainerScan(
    blobService(host.settings, undefined),
    containerClient,
    host.hostId,
    match.prefix,
  );
  await scan.load();

  /** Versions found and not yet finished: waiting to run, running, or failed and due again. */
  const unfinished = new Map<string, Found>();
  /** Versions found at or after the latest scan (later sweeps list them again), finished or not. */
  const seen = new Map<string, number>();
  const waiting = new Map<string, Found>();
  /** Versions whose read or receipt failed (the store's outage): tried again after the next sweep. */
  const unread: Found[] = [];
  let running = 0;
  let stopped = false;
  let drained: (() => void) | undefined;

  /** Runs one version; answers whether it is finished (ran, poisoned, or gone) rather than due again. */
  const run = async (version: Found): Promise<boolean> => {
    const receipt = await receipts.claim(version);
    if (receipt.complete) return true;
    const threshold = host.config.blobs.poisonBlobThreshold;
    const poisoned = async () => {
      await poison(host, fn, version, containerClient);
      await receipt.write({ Poisoned: 'true' });
      return true;
    };
    // Begun more often than the threshold without an outcome (each run ended the worker): poisoned
    // unrun, as the queue processor treats a message dequeued more often than its maxDequeueCount.
    if (receipt.tries > threshold) return poisoned();
    const reason = `New blob detected(LogsAndContainerScan): ${container}/${version.name}`;
    const read = await blobInput(containerClient, trigger, version.name, version.params, reason).catch(
      (error) => {
        if (isNotFound(error)) return undefined; // deleted since listing: nothing to run, as in the runtime
        throw error;
      },
    );
    // Changed since listing: that new version is found by a sweep of its own.
    if (read?.etag !== version.etag) return true;
    // As BlobQueueTriggerExecutor gives them: the queue message's, then the blob's times.
    read.input.triggerDetails = {
      MessageId: receipt.message.id,
      DequeueCount: String(receipt.tries),
      InsertedOn: detailTime(receipt.message.insertedOn),
      ...(read.created && { BlobCreated: detailTime(read.created) }),
      ...(read.lastModified && { BlobLastModified: detailTime(read.lastModified) }),
    };
    const outcome = await host.invoker.invoke(fn, read.input);
    if (outcome.succeeded) await receipt.write({});
    else if (receipt.tries >= threshold) return poisoned();
    // Failed, with tries left: the receipt counts this one already.
    return outcome.succeeded;
  };

  const slots = runSlots(host);
  const queue = blobTriggerQueue(host);
  /** Its message dequeued again: the failed version waits for a slot as a new one does. */
  const retry = (key: string, version: Found) => () => {
    waiting.set(key, version);
    pump();
  };
  const pump = () => {
    for (const [key, version] of waiting) {
      if (stopped || !slots.take()) return;
      waiting.delete(key);
      running++;
      // One blob's failure to be read or recorded must not hold up the others; it is tried again.
      run(version)
        .catch((error: Error) => {
          host.logs.host(
            'error',
            `blob trigger 'Functions.${fn.name}' on ${container}/${version.name}: ${error.message}`,
          );
          unread.push(version);
          return undefined;
        })
        .then((finished) => {
          if (finished) unfinished.delete(key);
          else if (finished === false && !stopped) queue.release(pump, retry(key, version));
          running--;
          if (running === 0) drained?.();
          slots.release();
        });
    }
  };
  slots.join(pump);

  /** Takes a version found by a sweep or an event, unless already known. */
  const found = (blob: ListedBlob) => {
    const key = keyOf(blob);
    const params = seen.has(key) ? undefined : match.match(blob.name);
    if (!params) return;
    const version = { container, ...blob, params };
    seen.set(key, blob.lastModified);
    unfinished.set(key, version);
    waiting.set(key, version);
    queue.enqueued();
  };

  /** What follows each sweep, and stands for one while events are connected. */
  const settle = async () => {
    for (const version of unread.splice(0)) waiting.set(keyOf(version), version);
    pump();
    // What the latest scan has passed is never listed as new again: forget it, so memory stays flat.
    for (const [key, lastModified] of seen)
      if (lastModified < scan.latestScan && !unfinished.has(key)) seen.delete(key);
    let oldest = Number.POSITIVE_INFINITY;
    for (const version of unfinished.values()) oldest = Math.min(oldest, version.lastModified);
    await scan.save(oldest);
  };

  const sweep = async () => {
    const listed = await scan.sweep(found, () => stopped);
    await settle();
    return listed;
  };

  /**
   * With events connected, one sweep finds what was written before the subscription ('due', then
   * 'running'); once it has ('done'), events alone report new blobs, and their watermarks move the
   * mark (not before: a watermark says nothing of blobs written before the subscription).
   */
  let catchUp: 'due' | 'running' | 'done' = 'due';
  const eventsUrl = host.blobEvents[service.url.replace(/\/$/, '')];
  const events =
    eventsUrl === undefined
      ? undefined
      : BlobEvents.open(eventsUrl, service.credential, container, match.prefix, {
          connected: () => {
            catchUp = 'due';
            wake();
          },
          lost: (error) => {
            catchUp = 'due';
            host.logs.host(
              'warning',
              `blob trigger 'Functions.${fn.name}': the store's blob events were lost (${error.message}); sweeping ${container} until they are back`,
            );
          },
          blob: (blob) => {
            scan.heard(blob.lastModified);
            found(blob);
            pump();
          },
          watermark: (time) => {
            if (catchUp === 'done') scan.advance(time);
          },
        });

  // A failed sweep (storage down or restarting) is logged and retried with backoff; the receipts say
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
  let sweeping: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    timer = undefined;
    let delay = SCAN_INTERVAL_MS;
    const connected = events?.connected === true;
    if (connected && catchUp === 'done') {
      sweeping = settle().finally(() => {
        if (!stopped) timer = setTimeout(tick, delay);
      });
      return;
    }
    if (connected) catchUp = 'running';
    sweeping = sweep()
      .then(
        (listed) => {
          outage.recovered();
          // Not connected: the runtime's pace. Connected: events report what is new (once this sweep,
          // or the next one if they connected while this one ran, has found what came before).
          if (catchUp === 'running') {
            catchUp = 'done';
            host.logs.host(
              'information',
              `blob trigger 'Functions.${fn.name}' is told of new blobs in ${container} by the store's blob events`,
            );
          } else if (!events?.connected) delay = Math.max(SCAN_INTERVAL_MS, listed * PAUSE_PER_BLOB_MS);
        },
        (error: Error) => {
          if (catchUp === 'running') catchUp = 'due';
          delay = outage.failed(error);
        },
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, delay);
      });
  };
  /** Events connected: the sweep after the subscription runs now rather than at the next tick. */
  const wake = () => {
    if (timer === undefined || stopped) return;
    clearTimeout(timer);
    tick();
  };
  // With events, the first sweep waits (a second at most) for the first subscription: subscribed, that
  // one sweep finds what came before, rather than a second listing right after it.
  if (events) {
    const subscribing = new Promise<void>((resolve) => {
      events.firstAttempt.then(resolve);
      setTimeout(resolve, SCAN_INTERVAL_MS).unref();
    });
    sweeping = subscribing.then(() => {
      if (!stopped) tick();
    });
  } else tick();
  return {
    async stop() {
      stopped = true;
      slots.leave(pump);
      queue.leave(pump);
      events?.stop();
      clearTimeout(timer);
      await sweeping;
      if (running > 0)
        await new Promise<void>((resolve) => {
          drained = resolve;
        });
    },
  };
}

/**
 * The storage extension's checks as it indexes a blob trigger: its path (BlobPathSource), then
 * (StorageClientProvider) the trigger's connection and the host's: a connection neither set (`<name>`, `AzureWebJobs<name>`) nor given by
 * identity settings (`<name>__…`) puts the function in error, named as the extension names it.
 */
function checkConnections(settings: Settings, trigger: TriggerBinding): void {
  triggerPath(resolveSettingReferences(String(trigger.path ?? ''), settings));
  for (const name of [String(trigger.connection ?? ''), '']) {
    const key = name || 'AzureWebJobsStorage';
    if (connectionSetting(settings, key) || hasIdentitySettings(settings, key)) continue;
    throw new IndexingError(
      `Storage account connection string 'AzureWebJobs${name || 'Storage'}' does not exist. Make sure that it is a defined App Setting.`,
      'Microsoft.Azure.WebJobs.Extensions.Storage.Blobs',
    );
  }
}

export const blobTrigger: TriggerKind = {
  type: 'blobTrigger',
  listen,
  index: checkConnections,
  /** The admin input is the blob's path (`container/name`), as for the runtime. */
  async adminInput(host, _fn, trigger, input) {
    const service = blobService(host.settings, trigger.connection as string | undefined);
    const { container, blob } = splitBlobPath(input);
    const { pattern } = triggerPath(resolveSettingReferences(String(trigger.path ?? ''), host.settings));
    const params = compilePattern(pattern).match(blob) ?? {};
    const reason = 'This function was programmatically called via the host APIs.';
    return (await blobInput(service.getContainerClient(container), trigger, blob, params, reason)).input;
  },
};
