/** Helpers shared by the functions host's tests. */
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { EventHubProducerClient } from '@azure/event-hubs';
import { BlobServiceClient } from '@azure/storage-blob';
import { type ComponentUnderTest, startComponent } from '../../stack/test-support.ts';

export const appPath = (name: string) => fileURLToPath(new URL(`./${name}/`, import.meta.url));

import { readLogFile } from '../logs.ts';

export { readLogFile as readLog };

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

export async function startEventHubsStores(dataDir: string): Promise<EventHubsStores> {
  const blob = await startComponent('blob', { port: 0 }, dataDir);
  const eventHubs = await startComponent('eventhubs', { port: 0 }, dataDir);
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

/** Blob storage, then the CommonJS test app with it as AzureWebJobsStorage and StorageConnection. */
export async function startCjsHostOnBlob(
  dataDir: string,
  logFile: string,
): Promise<{ blob: ComponentUnderTest; host: ComponentUnderTest; connectionString: string }> {
  const blob = await startComponent('blob', { port: 0 }, dataDir);
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
