/**
 * The blob trigger told of new blobs by the store's blob events (emulators/blob/blob-events.cjs), with
 * sweeps as the safety net. The trigger's connection goes through a proxy that counts its listings of
 * `tasks` and can cut (and refuse) its events stream, as a lost connection would.
 */
import { createServer, request, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { close, listen } from '../core/http.ts';
import { testDataDir, waitFor } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { appPath, followLog } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
/** The host's log so far (read on from where the previous call stopped: the tests poll it). */
const log = followLog(logFile);
let blob: ComponentUnderTest;
let host: ComponentUnderTest;
let storage: BlobServiceClient;

/** Azurite behind a proxy: counts the listings of `tasks`, and cuts or refuses the events stream. */
const proxy = {
  server: createServer((req, res) => {
    const events = req.url?.includes('/$events') ?? false;
    if (events && proxy.refuse) return void res.writeHead(503).end();
    if (/\/tasks\?.*comp=list/.test(req.url ?? '')) proxy.listings++;
    const target = new URL(blob.endpoints.blob as string);
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
        agent: false,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
    if (events) {
      proxy.streams.add(res);
      res.on('close', () => {
        proxy.streams.delete(res);
        upstream.destroy();
      });
    }
  }),
  streams: new Set<ServerResponse>(),
  listings: 0,
  refuse: false,
  cut() {
    for (const stream of proxy.streams) stream.destroy();
  },
};

const told = "blob trigger 'Functions.ProcessTask' is told of new blobs in tasks by the store's blob events";
const lost = "blob trigger 'Functions.ProcessTask': the store's blob events were lost";
const logged = (start: string) => log().filter((entry) => entry.message.startsWith(start)).length;
const runs = () => {
  const counts = new Map<string, number>();
  for (const { message } of log()) counts.set(message, (counts.get(message) ?? 0) + 1);
  return (name: string) => counts.get(`processed ${name}: {"n":"${name}"}`) ?? 0;
};
const upload = (name: string) =>
  storage
    .getContainerClient('tasks')
    .getBlockBlobClient(`${name}.json`)
    .upload(`{"n":"${name}"}`, `{"n":"${name}"}`.length);
const uploadAll = async (names: string[]) => {
  const queue = [...names];
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let name = queue.shift(); name; name = queue.shift()) await upload(name);
    }),
  );
};
const named = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);

beforeAll(async () => {
  blob = await startComponent('blob', { port: 0 }, data.dir);
  const connectionString = blob.endpoints.connectionString as string;
  storage = BlobServiceClient.fromConnectionString(connectionString);
  const port = await listen(proxy.server, 0);
  const proxied = `http://127.0.0.1:${port}/${storage.accountName}`;
  host = await startComponent(
    'functions',
    {
      port: 0,
      appDir: appPath('app-cjs'),
      logFile,
      settings: {
        AzureWebJobsStorage: connectionString,
        StorageConnection: connectionString.replace(blob.endpoints.blob as string, proxied),
      },
      blobEvents: { [proxied]: `${proxied}/$events` },
    },
    data.dir,
  );
});

afterAll(async () => {
  await host?.stop();
  proxy.cut();
  await close(proxy.server);
  await blob?.stop();
  data.remove();
});

describe('blob trigger told of new blobs by the blob events', () => {
  it('runs a new blob from its event, with no sweep after the one that followed the subscription', async () => {
    await waitFor('the events to be connected and the first sweep done', () => logged(told) === 1);
    const listings = proxy.listings;
    // A name the URL encodes: the event names the blob itself.
    await upload('told é+%');
    await waitFor('the blob processed', () => runs()('told é+%') === 1);
    expect(proxy.listings).toBe(listings);
  });

  it("moves the stored scan mark past what events reported with the store's watermarks, without a sweep", async () => {
    const listings = proxy.listings;
    const hosts = storage.getContainerClient('azure-webjobs-hosts');
    const { lastModified } = await upload('marked');
    await waitFor('marked.json processed', () => runs()('marked') === 1);
    // Any later write brings a watermark; the mark follows it a second behind.
    await storage.getContainerClient('scratch').createIfNotExists();
    await waitFor('a stored mark past the blob', async () => {
      await storage.getContainerClient('scratch').getBlockBlobClient('tick').upload('', 0);
      for await (const info of hosts.listBlobsFlat({ prefix: 'blobscaninfo/' })) {
        if (!info.name.endsWith('/tasks/scanInfo')) continue;
        const stored = JSON.parse((await hosts.getBlobClient(info.name).downloadToBuffer()).toString());
        return Date.parse(stored.LatestScan) > (lastModified?.getTime() ?? 0);
      }
      return false;
    });
    expect(proxy.listings).toBe(listings);
  });

  it('misses nothing while the events connection is lost, and is told again once it is back', async () => {
    const before = named('before', 50);
    const during = named('during', 50);
    const uploading = uploadAll(before);
    await waitFor('the first blobs to run', () => {
      const count = runs();
      return before.some((name) => count(name) > 0);
    });
    proxy.refuse = true;
    proxy.cut();
    await waitFor('the loss to be logged', () => logged(lost) === 1);
    await Promise.all([uploading, uploadAll(during)]);
    proxy.refuse = false;
    await waitFor('the events to be back', () => logged(told) === 2);
    await waitFor('every blob to run', () => {
      const count = runs();
      return [...before, ...during].every((name) => count(name) > 0);
    });
    const listings = proxy.listings;
    await upload('after');
    await waitFor('after.json processed', () => runs()('after') === 1);
    expect(proxy.listings).toBe(listings);
    const count = runs();
    expect([...before, ...during].filter((name) => count(name) !== 1)).toEqual([]);
    expect(runs()('told é+%')).toBe(1);
  });

  it('runs each blob once when its event and a sweep both report it, across reconnections and a restart', async () => {
    // Blobs keep arriving and running while each reconnection sweeps the container, which lists again
    // the blobs their events reported.
    const names: string[] = [];
    let uploading = true;
    const uploader = (async () => {
      for (let i = 0; uploading; i++) {
        names.push(`twice-${String(i).padStart(4, '0')}`);
        await upload(names[i] as string);
      }
    })();
    for (let cut = 1; cut <= 2; cut++) {
      const connections = logged(told);
      proxy.cut();
      await waitFor('the events to be back', () => logged(told) > connections);
    }
    await host.stop();
    await host.start();
    uploading = false;
    await uploader;
    await waitFor('every blob to run', () => {
      const count = runs();
      return names.every((name) => count(name) > 0);
    });
    // A later blob, written once all have run: the sweeps since have all passed over them.
    await upload('later');
    await waitFor('later.json processed', () => runs()('later') === 1);
    const count = runs();
    expect(names.filter((name) => count(name) !== 1)).toEqual([]);
  });
});
