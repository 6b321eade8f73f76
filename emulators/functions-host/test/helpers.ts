/** Helpers shared by the functions host's tests. */
import { cpSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type EventHubConsumerClient,
  EventHubProducerClient,
  type EventPosition,
  earliestEventPosition,
} from '@azure/event-hubs';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll } from 'vitest';
import { repositoryRoot } from '../../core/apps.ts';
import { waitFor } from '../../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../../stack/test-support.ts';
import { downloadBlob } from '../connections.ts';
import { HOSTS_CONTAINER } from '../triggers/blob-receipts.ts';

export const appPath = (name: string) => fileURLToPath(new URL(`./${name}/`, import.meta.url));

/** A copy of test app `app` at `appDir` (its packages the repository's) with `hostJson` as its host.json. */
export function appWithHostJson(app: string, appDir: string, hostJson: string): string {
  cpSync(appPath(app), appDir, { recursive: true });
  symlinkSync(join(repositoryRoot, 'node_modules'), join(appDir, 'node_modules'));
  writeFileSync(join(appDir, 'host.json'), hostJson);
  return appDir;
}

import { followLogFile, readLogFile } from '../logs.ts';

export { followLogFile as followLog, readLogFile as readLog };

/**
 * The CommonJS test app in a host of its own, keys in files (these suites run without storage; the
 * blob suite covers `azure-webjobs-secrets`), with two settings that show their precedence.
 */
export function startCjsHost(dataDir: string, logFile: string): Promise<ComponentUnderTest> {
  return startComponent(
    'functions',
    {
      port: 0,
      appDir: appPath('app-cjs'),
      logFile,
      settings: {
        AzureWebJobsSecretStorageType: 'files',
        FROM_SETTINGS: 'settings',
        OVERRIDDEN: 'from settings',
      },
    },
    dataDir,
  );
}

/** Blob storage and Event Hubs for a functions host under test, with a producer and a storage client. */
export interface EventHubsStores {
  blob: ComponentUnderTest;
  eventHubs: ComponentUnderTest;
  /** Sends to the topology's `taskevents`. */
  producer: EventHubProducerClient;
  storage: BlobServiceClient;
  /** Closes the producer and stops both stores (stop the host first: it releases its partitions there). */
  stop(): Promise<void>;
}

/**
 * Both stores, started at once (neither needs the other); Azurite in memory (BLOB_IN_MEMORY), as these
 * tests never restart a store. If one fails to start, the other is stopped.
 */
export async function startEventHubsStores(dataDir: string): Promise<EventHubsStores> {
  const starts = await Promise.allSettled([
    startComponent('blob', { port: 0 }, dataDir, BLOB_IN_MEMORY),
    startComponent('eventhubs', { port: 0 }, dataDir),
  ]);
  const [blob, eventHubs] = starts.map((start) => (start.status === 'fulfilled' ? start.value : undefined));
  if (!blob || !eventHubs) {
    await Promise.all([blob?.stop(), eventHubs?.stop()]);
    throw starts.map((start) => start.status === 'rejected' && start.reason).find(Boolean);
  }
  const producer = new EventHubProducerClient(eventHubs.endpoints.connectionString as string, 'taskevents');
  const storage = BlobServiceClient.fromConnectionString(blob.endpoints.connectionString as string);
  return {
    blob,
    eventHubs,
    producer,
    storage,
    async stop() {
      await producer.close();
      await eventHubs.stop();
      await blob.stop();
    },
  };
}

/**
 * A suite's Event Hubs stores, started before its tests; after them go its host (the one `host()` gives,
 * first: it releases its partitions there), the stores and the data folder. Gives the stores' getter.
 */
export function eventHubsStoresFor(
  data: { dir: string; remove(): void },
  host: () => ComponentUnderTest | undefined,
): () => EventHubsStores {
  let stores: EventHubsStores | undefined;
  beforeAll(async () => {
    stores = await startEventHubsStores(data.dir);
  });
  afterAll(async () => {
    await host()?.stop();
    await stores?.stop();
    data.remove();
  });
  return () => stores as EventHubsStores;
}

/**
 * The ES module test app's Event Hubs functions on the stack's blob storage and Event Hubs: both read the
 * one consumer group the Basic tier offers, so `disabled` names the one that does not run.
 */
export function startEsmHostOnEventHubs(
  stores: { blob: ComponentUnderTest; eventHubs: ComponentUnderTest },
  dataDir: string,
  logFile: string,
  disabled: string,
  appDir = appPath('app-esm'),
): Promise<ComponentUnderTest> {
  return startComponent(
    'functions',
    {
      port: 0,
      appDir,
      logFile,
      settings: {
        AzureWebJobsStorage: stores.blob.endpoints.connectionString as string,
        StreamHubConnection: stores.eventHubs.endpoints.connectionString as string,
        OneConsumerGroup: '$Default',
        [`AzureWebJobs.${disabled}.Disabled`]: 'true',
      },
    },
    dataDir,
  );
}

/** The events the ES module test app's Event Hubs functions logged with body `text`. */
export const eventsLogged = (logFile: string, text: string) =>
  readLogFile(logFile).filter((e) => e.message.startsWith(`message "${text}"`));

/** The host id the running host reports (`GET /admin/host/status`, master key). */
export async function hostIdOf(host: ComponentUnderTest, masterKey: string): Promise<string> {
  const status = await fetch(`${host.endpoints.baseUrl}/admin/host/status`, {
    headers: { 'x-functions-key': masterKey },
  });
  return ((await status.json()) as { id: string }).id;
}

/**
 * For the tests of a host on blob storage, which restart the host but never its store: Azurite keeps
 * its data in memory instead of saving its database (hundreds of blobs and receipts in the blob
 * trigger's tests) every 5 s and each blob's content to a file, CPU the host's runs need.
 */
export const BLOB_IN_MEMORY = { inMemory: true };

/** Blob storage, then the CommonJS test app with it as AzureWebJobsStorage and StorageConnection. */
export async function startCjsHostOnBlob(
  dataDir: string,
  logFile: string,
): Promise<{ blob: ComponentUnderTest; host: ComponentUnderTest; connectionString: string }> {
  const blob = await startComponent('blob', { port: 0 }, dataDir, BLOB_IN_MEMORY);
  const connectionString = blob.endpoints.connectionString as string;
  const settings = { AzureWebJobsStorage: connectionString, StorageConnection: connectionString };
  const host = await startComponent(
    'functions',
    { port: 0, appDir: appPath('app-cjs'), logFile, settings },
    dataDir,
  );
  return { blob, host, connectionString };
}

/**
 * Sends `total` bytes in 64 KiB chunks (with Content-Length when `declared`, else chunked), as fast as
 * the connection takes them, and stops once the answer arrives or the connection closes. Resolves the
 * answer and how many bytes the host let the client send.
 */
export function sendLarge(
  url: string,
  total: number,
  declared: boolean,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; sent: number }> {
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    let answered = false;
    const framing = declared ? { 'content-length': total } : { 'transfer-encoding': 'chunked' };
    const req = request(url, { method: 'POST', headers: { ...headers, ...framing } }, (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        body += text;
      });
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body, sent });
      });
    });
    // Once answered, the host closing the connection under a write that is still going is expected.
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    const pump = () => {
      while (!answered && !req.destroyed && sent < total) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (sent >= total && !answered) req.end();
    };
    pump();
  });
}

/** The Event Hubs output test app, keys in files, with `settings` (its connections). */
export function startEventHubOutputHost(
  dataDir: string,
  logFile: string,
  settings: Record<string, string>,
): Promise<ComponentUnderTest> {
  return startComponent(
    'functions',
    {
      port: 0,
      appDir: appPath('app-eventhub-output'),
      logFile,
      settings: { AzureWebJobsSecretStorageType: 'files', ...settings },
    },
    dataDir,
  );
}

/** An event as received: its body's bytes as sent, and where it is. */
export interface ReceivedEvent {
  body: Buffer;
  partitionId: string;
  sequenceNumber: number;
}

/**
 * Where each partition of the consumer's hub ends now: the position after its last event. The partitions
 * (`ids`, asked of the hub unless given) are asked at once: each management request waits ~45 ms on
 * loopback (the client's Nagle against the emulator's delayed ACK), one after the other a round trip each.
 */
export async function hubEnds(
  consumer: EventHubConsumerClient,
  ids?: string[],
): Promise<Record<string, EventPosition>> {
  ids ??= await consumer.getPartitionIds();
  const properties = await Promise.all(ids.map((id) => consumer.getPartitionProperties(id)));
  return Object.fromEntries(
    properties.map((p) => [
      p.partitionId,
      p.isEmpty
        ? earliestEventPosition
        : { sequenceNumber: p.lastEnqueuedSequenceNumber, isInclusive: false },
    ]),
  );
}

/** A subscription of the consumer that keeps what it receives, to read back as often as needed. */
export interface EventFeed {
  /** The first `count` or more events after `from` (as `hubEnds` gives it), in partition and sequence order. */
  after(from: Record<string, EventPosition>, count: number): Promise<ReceivedEvent[]>;
  close(): Promise<void>;
}

/** Receives every event of the consumer's hub from `from` on, until closed. */
export function followEvents(
  consumer: EventHubConsumerClient,
  from: Record<string, EventPosition> | EventPosition = earliestEventPosition,
): EventFeed {
  const received: ReceivedEvent[] = [];
  const subscription = consumer.subscribe(
    {
      async processEvents(events, context) {
        for (const event of events)
          received.push({
            body: event.body as Buffer,
            partitionId: context.partitionId,
            sequenceNumber: event.sequenceNumber,
          });
      },
      async processError() {},
    },
    { startPosition: from, skipParsingBodyAsJson: true, maxWaitTimeInSeconds: 1 },
  );
  /** After `position`: all of an empty (or unnamed) partition's events, else those past its last one. */
  const isAfter = (event: ReceivedEvent, position: EventPosition | undefined) =>
    position === undefined ||
    position === earliestEventPosition ||
    event.sequenceNumber > (position.sequenceNumber ?? -1);
  return {
    async after(from, count) {
      const events = () => received.filter((event) => isAfter(event, from[event.partitionId]));
      await waitFor(`${count} event(s)`, () => events().length >= count);
      return events().sort(
        (a, b) => a.partitionId.localeCompare(b.partitionId) || a.sequenceNumber - b.sequenceNumber,
      );
    },
    close: () => subscription.close(),
  };
}

/** The `count` events enqueued after `from`, in partition and sequence order, on a subscription of their own. */
export async function receiveEvents(
  consumer: EventHubConsumerClient,
  from: Record<string, EventPosition> | EventPosition,
  count: number,
): Promise<ReceivedEvent[]> {
  const feed = followEvents(consumer, from);
  try {
    return await feed.after({}, count); // no position: all it received
  } finally {
    await feed.close();
  }
}

/**
 * The scan mark a host's blob trigger on `container` stored (`LatestScan` of
 * azure-webjobs-hosts/blobscaninfo/<hostId>/<account>/<container>/scanInfo, ms), 0 before its first save.
 */
export async function storedScanMark(storage: BlobServiceClient, container: string): Promise<number> {
  const hosts = storage.getContainerClient(HOSTS_CONTAINER);
  for await (const info of hosts.listBlobsFlat({ prefix: 'blobscaninfo/' })) {
    if (!info.name.endsWith(`/${container}/scanInfo`)) continue;
    const stored = JSON.parse((await downloadBlob(hosts.getBlobClient(info.name))).content.toString());
    return Date.parse(stored.LatestScan);
  }
  return 0;
}
