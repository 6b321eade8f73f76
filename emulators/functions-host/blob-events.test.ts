/**
 * The blob trigger told of new blobs by the store's blob events (emulators/blob/blob-events.cjs), with
 * sweeps as the safety net. The trigger's connection goes through a proxy that counts (and can hold
 * back) its listings of `tasks` and can cut (and refuse) its events stream, as a lost connection would.
 * The test app holds the runs of `held-*` blobs until the test writes `release`, in a host.json with
 * time for that.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { close, listen } from '../core/http.ts';
import { testDataDir, waitFor } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { appPath, appWithHostJson, followLog, storedScanMark } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
/** The host's log so far (read on from where the previous call stopped: the tests poll it). */
const log = followLog(logFile);
let blob: ComponentUnderTest;
let host: ComponentUnderTest;
let storage: BlobServiceClient;
/** The file whose writing ends the test app's held runs (`held-*` blobs). */
const release = join(data.dir, 'release-held-runs');

/** The query of a subscription to the events of blobs in `tasks`, as the host's URL encodes it. */
const TASKS_EVENTS = `subjectBeginsWith=${encodeURIComponent('/blobServices/default/containers/tasks/')}`;

/**
 * Azurite behind a proxy: counts the listings of `tasks` (and can hold them back), cuts, refuses or holds
 * back the events stream, and can drop its watermarks.
 */
const proxy = {
  server: createServer((req, res) => {
    const events = req.url?.includes('/$events') ?? false;
    // The host subscribes once per blob trigger: only ProcessTask's (tasks) subscriptions are refused.
    if (events && proxy.refusals > 0 && req.url?.includes(TASKS_EVENTS)) {
      proxy.refusals--;
      return void res.writeHead(503).end();
    }
    if (events && proxy.holdEvents) return void proxy.heldEvents.push(() => forward(req, res, events));
    if (/\/tasks\?.*comp=list/.test(req.url ?? '')) {
      proxy.listings++;
      if (proxy.holdListings) return void proxy.held.push(() => forward(req, res, events));
    }
    forward(req, res, events);
  }),
  streams: new Set<ServerResponse>(),
  listings: 0,
  /** True: listings of `tasks` wait in `held` until `releaseListings`. */
  holdListings: false,
  held: [] as (() => void)[],
  /** How many subscriptions to the events of `tasks` to refuse (503), the next ones first. */
  refusals: 0,
  /** True: subscriptions to the events stream wait in `heldEvents` until `releaseEvents`. */
  holdEvents: false,
  heldEvents: [] as (() => void)[],
  /** False: the events stream's watermarks are dropped, so the trigger's scan mark stays where it is. */
  watermarks: true,
  cut() {
    for (const stream of proxy.streams) stream.destroy();
  },
  releaseListings() {
    proxy.holdListings = false;
    for (const listing of proxy.held.splice(0)) listing();
  },
  releaseEvents() {
    proxy.holdEvents = false;
    for (const subscription of proxy.heldEvents.splice(0)) subscription();
  },
};

function forward(req: IncomingMessage, res: ServerResponse, events: boolean) {
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
      if (!events) return void answer.pipe(res);
      // Line by line, so that watermarks can be held back.
      let rest = '';
      answer.setEncoding('utf8');
      answer.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines)
          if (proxy.watermarks || !line.startsWith('{"watermark"')) res.write(`${line}\n`);
      });
      answer.on('end', () => res.end());
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
}

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
/** How many blobs `keepUploading` writes ahead of their runs, when it is asked to wait for them. */
const LEAD = 16;
/**
 * Uploads `<prefix>-0000`, `<prefix>-0001` … one after another until stopped, each once `room(names
 * written)` says so. Written as fast as Azurite takes them, they outran the host's four slots (~350
 * blobs, most of them run only after the restart).
 */
const keepUploading = (prefix: string, room: (names: string[]) => boolean) => {
  const names: string[] = [];
  let uploading = true;
  const uploader = (async () => {
    for (;;) {
      await waitFor(`room for more ${prefix}-* blobs`, () => !uploading || room(names));
      if (!uploading) return;
      names.push(`${prefix}-${String(names.length).padStart(4, '0')}`);
      await upload(names.at(-1) as string);
    }
  })();
  return {
    names,
    stop() {
      uploading = false;
      return uploader;
    },
  };
};
/** Room while the blobs are fewer than LEAD ahead of their runs. */
const aheadOfRuns = (prefix: string) => (names: string[]) =>
  names.length - logged(`processed ${prefix}-`) < LEAD;
/** How many blobs `keepUploading` writes in each state of the host, when it is asked to. */
const PER_STATE = 4;
/**
 * Room for PER_STATE blobs in each state of the host as the proxy sees it: how many events streams it
 * holds open and how many listings it made. In a row, ~100 blobs landed while a restarted host's process
 * started, all found by the same sweep.
 */
const perHostState = () => {
  let state = '';
  let written = 0;
  return (names: string[]) => {
    const now = `${proxy.streams.size} ${proxy.listings}`;
    if (now !== state) [state, written] = [now, names.length];
    return names.length - written < PER_STATE;
  };
};
const named = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);

/** The test app's host.json, with time for its held runs: its 2 s functionTimeout would end them. */
const heldRunsHostJson = () => {
  const hostJson = JSON.parse(readFileSync(join(appPath('app-cjs'), 'host.json'), 'utf8'));
  return JSON.stringify({ ...hostJson, functionTimeout: '00:05:00' });
};

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
      appDir: appWithHostJson('app-cjs', join(data.dir, 'app'), heldRunsHostJson()),
      logFile,
      settings: {
        HeldRunsRelease: release,
        AzureWebJobsStorage: connectionString,
        StorageConnection: connectionString.replace(blob.endpoints.blob as string, proxied),
      },
      blobEvents: { [proxied]: `${proxied}/$events` },
    },
    data.dir,
  );
});

afterAll(async () => {
  writeFileSync(release, ''); // a failed test may have left runs held: the host's stop waits for them
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
    const { lastModified } = await upload('marked');
    await waitFor('marked.json processed', () => runs()('marked') === 1);
    // Any later write brings a watermark; the mark follows it a second behind.
    await storage.getContainerClient('scratch').createIfNotExists();
    await waitFor('a stored mark past the blob', async () => {
      await storage.getContainerClient('scratch').getBlockBlobClient('tick').upload('', 0);
      return (await storedScanMark(storage, 'tasks')) > (lastModified?.getTime() ?? 0);
    });
    expect(proxy.listings).toBe(listings);
  });

  it('misses nothing while the events connection is lost, and is told again once it is back', async () => {
    const before = named('before', 24);
    const during = named('during', 24);
    const uploading = uploadAll(before);
    await waitFor('the first blobs to run', () => {
      const count = runs();
      return before.some((name) => count(name) > 0);
    });
    // The resubscription that follows the loss at once is refused; the retry after the backoff's first
    // delay is held until the uploads are done (refused, the retries' backoff grew while they ran, and the
    // stream came back up to ~10 s after them).
    proxy.refusals = 1;
    proxy.holdEvents = true;
    proxy.cut();
    await waitFor('the loss to be logged', () => logged(lost) === 1);
    await Promise.all([uploading, uploadAll(during)]);
    await waitFor('the resubscription refused', () => proxy.refusals === 0);
    proxy.releaseEvents();
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
    // Three runs held take three of host.json's four slots. With no watermark since they were written,
    // the sweep after the reconnection lists them (its mark is before them) while they run: were one
    // taken again, it would run in the slot left, ahead of a blob written after that sweep, and hold it.
    const held = named('held', 3);
    proxy.watermarks = false;
    await uploadAll(held);
    await waitFor('the held runs', () => {
      const count = runs();
      return held.every((name) => count(name) === 1);
    });
    const connected = logged(told);
    proxy.cut();
    await waitFor('the events to be back', () => logged(told) > connected);
    proxy.watermarks = true;
    await upload('unheld');
    await waitFor('unheld.json processed, or a held blob taken again', () => {
      const count = runs();
      return count('unheld') === 1 || held.some((name) => count(name) > 1);
    });
    writeFileSync(release, '');
    const heldRuns = runs();
    expect(held.filter((name) => heldRuns(name) !== 1)).toEqual([]);
    // Blobs keep arriving and running while each reconnection sweeps the container, which lists again
    // the blobs their events reported.
    const arriving = keepUploading('twice', aheadOfRuns('twice'));
    for (let cut = 1; cut <= 2; cut++) {
      const connections = logged(told);
      proxy.cut();
      await waitFor('the events to be back', () => logged(told) > connections);
    }
    await arriving.stop();
    // At the stop, blobs their events reported wait for a slot, older than the mark the latest sweep
    // reached: four held runs hold every slot, and the sweep after a cut begins two seconds (by the
    // store's clock) after the waiting blobs were written. The restarted host finds them only if the
    // stored mark was held back to the oldest blob not yet run.
    rmSync(release);
    const heldAtStop = named('held-at-stop', 4);
    await uploadAll(heldAtStop);
    await waitFor('every slot held', () => {
      const count = runs();
      return heldAtStop.every((name) => count(name) === 1);
    });
    const waiting = named('waiting', 4);
    const written = await Promise.all(waiting.map(upload));
    const newest = Math.max(...written.map(({ lastModified }) => lastModified?.getTime() ?? 0));
    await waitFor(
      "the store's clock two seconds past the waiting blobs",
      async () => ((await storage.getAccountInfo()).date?.getTime() ?? 0) >= newest + 2_000,
    );
    const connections = logged(told);
    proxy.cut();
    await waitFor('the events to be back', () => logged(told) > connections);
    // Blobs keep arriving while the host stops and starts, a few in each of its states. Its held runs end
    // once its triggers no longer take blobs (their events streams closed), so the waiting blobs are left
    // for the restarted host.
    const restarting = keepUploading('restart', perHostState());
    const stopping = host.stop();
    await waitFor('the triggers to stop', () => proxy.streams.size === 0);
    writeFileSync(release, '');
    await stopping;
    // The restarted host's first sweep lists blobs its events reported while they run (held, in three of
    // the four slots): it is held until they do. Were one taken again, it would run in the slot left.
    rmSync(release);
    proxy.holdListings = true;
    await host.start();
    await waitFor("the restarted host's first sweep", () => proxy.held.length > 0);
    const heldAtStart = named('held-at-start', 3);
    await uploadAll(heldAtStart);
    await waitFor('the held runs', () => {
      const count = runs();
      return heldAtStart.every((name) => count(name) === 1);
    });
    proxy.releaseListings();
    await waitFor('the sweep done', () => logged(told) > connections + 1);
    await upload('unheld-at-start');
    await waitFor('unheld-at-start.json processed, or a held blob taken again', () => {
      const count = runs();
      return count('unheld-at-start') === 1 || heldAtStart.some((name) => count(name) > 1);
    });
    writeFileSync(release, '');
    await restarting.stop();
    const names = [
      ...arriving.names,
      ...heldAtStop,
      ...waiting,
      ...heldAtStart,
      'unheld-at-start',
      ...restarting.names,
    ];
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
