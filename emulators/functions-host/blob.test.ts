/**
 * The host against Azurite (the stack's blob component), driven with @azure/storage-blob: keys kept in
 * azure-webjobs-secrets, the blob trigger with receipts across restarts and poison handling, blob outputs.
 */
import { join } from 'node:path';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StackSecrets } from '../core/secrets.ts';
import { testContext, testDataDir, waitFor } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import { downloadBlob } from './connections.ts';
import { followLog, hostIdOf, startCjsHostOnBlob } from './test/helpers.ts';
import { ContainerScan } from './triggers/blob-scan.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
/** The host's log so far (read on from where the previous call stopped: the tests poll it). */
const log = followLog(logFile);
let blob: ComponentUnderTest;
let host: ComponentUnderTest;
let storage: BlobServiceClient;
let secrets: StackSecrets;
let hostId: string;

const base = () => host.endpoints.baseUrl as string;
const count = (message: string) => log().filter((entry) => entry.message === message).length;
const text = async (container: string, name: string) =>
  (await downloadBlob(storage.getContainerClient(container).getBlobClient(name))).content.toString('utf8');
const upload = (container: string, name: string, content: string) =>
  storage.getContainerClient(container).getBlockBlobClient(name).upload(content, Buffer.byteLength(content));
const names = async (container: string, prefix?: string) => {
  const found: string[] = [];
  for await (const item of storage.getContainerClient(container).listBlobsFlat({ prefix }))
    found.push(item.name);
  return found;
};

/** The poison message written for a blob (of that ETag, if given), if any. */
const poisonFor = async (container: string, name: string, etag?: string) => {
  const poison = storage.getContainerClient('webjobs-blobtrigger-poison');
  for (const found of await names('webjobs-blobtrigger-poison').catch(() => [])) {
    const message = JSON.parse((await downloadBlob(poison.getBlobClient(found))).content.toString('utf8'));
    const same = message.ContainerName === container && message.BlobName === name;
    if (same && (etag === undefined || message.ETag === etag)) return message;
  }
  return undefined;
};

beforeAll(async () => {
  const started = await startCjsHostOnBlob(data.dir, logFile);
  ({ blob, host } = started);
  storage = BlobServiceClient.fromConnectionString(started.connectionString);
  await storage.getContainerClient('tasks').createIfNotExists();
  secrets = (await testContext(data.dir)).secrets;
  hostId = await hostIdOf(host, secrets.masterKey);
});

afterAll(async () => {
  await host?.stop();
  await blob?.stop();
  data.remove();
});

describe('keys in azure-webjobs-secrets', () => {
  it('keeps host secrets in the runtime shape, seeded with the stack keys', async () => {
    const stored = JSON.parse(await text('azure-webjobs-secrets', `${hostId}/host.json`));
    expect(stored).toMatchObject({
      masterKey: { name: 'master', value: secrets.masterKey, encrypted: false },
      functionKeys: [{ name: 'default', value: secrets.functionKey, encrypted: false }],
      systemKeys: [{ name: 'eventgrid_extension', value: secrets.eventGridExtensionKey, encrypted: false }],
      source: 'runtime',
    });
  });

  it('creates function secrets on first use and keeps keys set through the actions across restarts', async () => {
    await host.action('setKey', {
      function: 'keyed',
      keyName: 'kept',
      keyValue: 'kept-across-restarts-0123456789',
    });
    const stored = JSON.parse(await text('azure-webjobs-secrets', `${hostId}/keyed.json`));
    expect(stored.keys.map((key: { name: string }) => key.name)).toEqual(['default', 'kept']);
    await host.stop();
    await host.start();
    expect((await fetch(`${base()}/api/keyed?code=kept-across-restarts-0123456789`)).status).toBe(200);
    expect((await fetch(`${base()}/api/keyed?code=${stored.keys[0].value}`)).status).toBe(200);
  });
});

describe('blob trigger', () => {
  it('runs once per blob matching tasks/{name}.json, with {name} binding data and a blob output', async () => {
    await upload('tasks', 'readme.txt', 'not a task');
    await upload('tasks', 'a.json', '{"Title":"A"}');
    await waitFor('a.json processed', () => count('processed a: {"Title":"A"}') === 1);
    expect(await waitFor('the output blob', () => text('processed', 'a.txt').catch(() => undefined))).toMatch(
      // properties as Azure.Storage.Blobs' BlobProperties names them: ContentLength, CreatedOn …, times as
      // the host's JSON writes a DateTimeOffset
      /^seen 13 bytes \(13, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00\) of tasks\/a\.json$/,
    );
    const executing = log().find((e) => e.function === 'ProcessTask' && e.message.startsWith('Executing'));
    expect(executing?.message).toContain("Reason='New blob detected(LogsAndContainerScan): tasks/a.json'");
    // b.json is listed after a.json: once b has run, the scans since a's run have all passed over a.
    await upload('tasks', 'b.json', '{"Title":"B"}');
    await waitFor('b.json processed', () => count('processed b: {"Title":"B"}') === 1);
    expect(count('processed a: {"Title":"A"}')).toBe(1);
    expect(log().some((e) => e.message.startsWith('processed readme'))).toBe(false);
  });

  it('keeps a completed receipt per blob version in azure-webjobs-hosts/blobreceipts', async () => {
    const { etag } = await storage.getContainerClient('tasks').getBlobClient('a.json').getProperties();
    const receipt = `blobreceipts/${hostId}/Host.Functions.ProcessTask/${etag}/tasks/a.json`;
    expect(await names('azure-webjobs-hosts', 'blobreceipts/')).toContain(receipt);
    const { metadata } = await storage
      .getContainerClient('azure-webjobs-hosts')
      .getBlobClient(receipt)
      .getProperties();
    expect(metadata?.incomplete).toBeUndefined();
  });

  it('does not run a finished version again after a restart, but runs a new version of it', async () => {
    await host.stop();
    await host.start();
    await upload('tasks', 'c.json', '{"Title":"C"}');
    await waitFor('c.json processed', () => count('processed c: {"Title":"C"}') === 1);
    expect(count('processed a: {"Title":"A"}')).toBe(1);
    expect(count('processed b: {"Title":"B"}')).toBe(1);
    await upload('tasks', 'a.json', '{"Title":"A2"}');
    await waitFor('the new version of a.json', () => count('processed a: {"Title":"A2"}') === 1);
  });

  it('runs each of 148 blobs arriving while it runs, while it stops and while it starts again exactly once', async () => {
    const names = Array.from({ length: 148 }, (_, i) => `many-${String(i).padStart(3, '0')}`);
    const processed = (name: string) => `processed ${name}: {"n":"${name}"}`;
    const runs = () => {
      const counts = new Map<string, number>();
      for (const { message } of log()) counts.set(message, (counts.get(message) ?? 0) + 1);
      return (name: string) => counts.get(processed(name)) ?? 0;
    };
    const uploadAll = async (batch: string[]) => {
      const queue = [...batch];
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let name = queue.shift(); name; name = queue.shift())
            await upload('tasks', `${name}.json`, `{"n":"${name}"}`);
        }),
      );
    };
    // A hundred while it runs: its 4 slots leave a backlog that outlasts sweeps, so the scan mark it
    // stores must stay behind blobs found and not yet run, some of which still wait when it stops. Then
    // blobs of their own for each phase of the restart: sent as it begins to stop, and to start again.
    const first = uploadAll(names.slice(0, 100));
    // One read of the log per poll (runs() reads it all): a read per name would burn the CPU the host needs.
    await waitFor('the first blobs to run', () => {
      const count = runs();
      return names.some((name) => count(name) > 0);
    });
    const stopping = host.stop();
    const whileStopping = uploadAll(names.slice(100, 124));
    await stopping;
    const starting = host.start();
    await Promise.all([first, whileStopping, starting, uploadAll(names.slice(124))]);
    await waitFor(
      'every blob to run',
      () => {
        const count = runs();
        return names.every((name) => count(name) > 0);
      },
      120_000,
    );
    // Two later blobs, the second written once the first has run: a sweep has passed over all of them
    // since every one ran, so a second run of any would have happened by now.
    for (const name of ['many-x', 'many-y']) {
      await upload('tasks', `${name}.json`, `{"n":"${name}"}`);
      await waitFor(`${name}.json processed`, () => runs()(name) === 1);
    }
    const count = runs();
    expect(names.filter((name) => count(name) !== 1)).toEqual([]);
  });

  // Alone: it reads the gaps between its tries from the log, which other tests' runs in the host would
  // lengthen.
  it('gives up after poisonBlobThreshold failed tries (host.json: 3, queues.maxDequeueCount 1) and records a poison message', async () => {
    await upload('poison-input', 'bad.txt', 'bad');
    const message = await waitFor('the poison message', () => poisonFor('poison-input', 'bad.txt'));
    const { etag, createdOn, lastModified } = await storage
      .getContainerClient('poison-input')
      .getBlobClient('bad.txt')
      .getProperties();
    expect(message).toEqual({
      Type: 'BlobTrigger',
      FunctionId: 'Host.Functions.poisoned',
      BlobType: 'BlockBlob',
      ContainerName: 'poison-input',
      BlobName: 'bad.txt',
      ETag: etag,
    });
    const failures = () =>
      log().filter((e) => e.message.startsWith("Executed 'Functions.poisoned' (Failed")).length;
    expect(failures()).toBe(3);
    // Each failed run is tried again at the blob queue listener's next poll (100 ms after the poll that
    // dequeued it, then ~200, 300 … ms), not at the next sweep a second later.
    const entries = log();
    const tries = entries.filter(
      (e) =>
        e.function === 'poisoned' &&
        e.message.includes('poison-input/bad.txt') &&
        e.message.startsWith('Executing'),
    );
    const ended = tries.map((begun) =>
      entries.find((e) => e.invocationId === begun.invocationId && e.message.startsWith('Executed')),
    );
    const gaps = tries.slice(1).map((next, i) => Date.parse(next.time) - Date.parse(ended[i]?.time ?? ''));
    expect(gaps).toHaveLength(2);
    for (const gap of gaps) expect(gap).toBeLessThan(700);
    // Each try names its queue message, one for all tries, and how often it was dequeued.
    const details = tries.map(
      (begun) =>
        entries.find(
          (e) => e.invocationId === begun.invocationId && e.message.startsWith('Trigger Details: '),
        )?.message,
    );
    const [first] = details;
    const queued = /^Trigger Details: MessageId: ([0-9a-f-]{36}), DequeueCount: 1, InsertedOn: (\S+), /.exec(
      first ?? '',
    );
    const time = (date: Date | undefined) => date?.toISOString().replace('Z', '+00:00');
    const blobTimes = `BlobCreated: ${time(createdOn)}, BlobLastModified: ${time(lastModified)}`;
    expect(queued?.[2]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000\+00:00$/);
    expect(details).toEqual(
      [1, 2, 3].map(
        (count) =>
          `Trigger Details: MessageId: ${queued?.[1]}, DequeueCount: ${count}, InsertedOn: ${queued?.[2]}, ${blobTimes}`,
      ),
    );
    await upload('tasks', 'd.json', '{"Title":"D"}');
    await waitFor('d.json processed', () => count('processed d: {"Title":"D"}') === 1);
    expect(failures()).toBe(3);
  });

  // These two side by side: each waits for the host's sweeps of its own container, for a function of its own.
  it.concurrent('runs on every blob of a container that a path names alone, as the storage extension does', async () => {
    await upload('whole', 'deep/down/x.txt', 'x');
    await upload('whole', 'y', 'y');
    await waitFor(
      'both blobs',
      () => count('whole whole/deep/down/x.txt: x') === 1 && count('whole whole/y: y') === 1,
    );
  });

  it.concurrent("gives the blob's metadata with its names' case, as Azure's host gives it to the library (which lowers the first letter)", async () => {
    const content = 'm';
    await storage
      .getContainerClient('meta')
      .getBlockBlobClient('m1')
      .upload(content, 1, { metadata: { TaskId: 'T1', fileName: 'f.txt', lower: 'x' } });
    const logged = await waitFor('the run', () => log().find((e) => e.message.startsWith('metadata m1: ')));
    expect(JSON.parse(logged.message.slice('metadata m1: '.length))).toEqual({
      taskId: 'T1',
      fileName: 'f.txt',
      lower: 'x',
    });
  });

  it("names the blob's type in the poison message, as the extension does (AppendBlob)", async () => {
    const log = storage.getContainerClient('poison-input').getAppendBlobClient('log.txt');
    await log.create();
    await log.appendBlock('line', 4);
    const { etag } = await log.getProperties();
    const message = await waitFor('its poison message', () => poisonFor('poison-input', 'log.txt', etag));
    expect(message.BlobType).toBe('AppendBlob');
  });

  // Side by side with the next test, which needs no host.
  it.concurrent('counts a try that ended the worker: poisoned unrun once begun more than poisonBlobThreshold times', async () => {
    await upload('crash', 'x', 'x');
    // Killed under each of its runs, as a crash or a held event loop ends the worker; it restarts by itself.
    for (let run = 1; run <= 3; run++) {
      await waitFor(`run ${run}`, () => count('crashing x begun') === run);
      host.kill();
    }
    expect((await waitFor('the poison message', () => poisonFor('crash', 'x'))).FunctionId).toBe(
      'Host.Functions.crashing',
    );
    expect(count('crashing x begun')).toBe(3);
  });

  // Side by side with the previous test: this one drives a scan of its own, on a container no function
  // watches, and waits for the storage's clock; the previous one waits for the host's restarts.
  it.concurrent('stores the scan mark again only once a sweep lists a blob modified since the stored mark', async () => {
    const container = storage.getContainerClient('scanned');
    await container.createIfNotExists();
    const info = storage
      .getContainerClient('azure-webjobs-hosts')
      .getBlobClient(`blobscaninfo/scan-test/${storage.accountName}/scanned/scanInfo`);
    const stored = async () => {
      const { content, etag } = await downloadBlob(info);
      return { mark: Date.parse(JSON.parse(content.toString('utf8')).LatestScan), etag };
    };
    const scan = new ContainerScan(storage, container, 'scan-test', '');
    await scan.load();
    const sweep = async () => {
      await scan.sweep(
        () => {},
        () => false,
      );
      await scan.save();
    };
    const sweepUntilStoredPast = (modified: number) =>
      waitFor('a stored mark past the blob', async () => {
        await sweep();
        const found = await stored().catch(() => undefined);
        return found && found.mark > modified && found;
      });
    const { lastModified } = await upload('scanned', 'x.json', '{}');
    const quiet = await sweepUntilStoredPast(lastModified?.getTime() ?? 0);
    // Sweeps of the quiet container move the mark in memory (the storage's clock goes on) but store nothing.
    await waitFor('a sweep with a later mark', async () => {
      await sweep();
      return scan.latestScan > quiet.mark;
    });
    expect((await stored()).etag).toBe(quiet.etag);
    const { lastModified: changed } = await upload('scanned', 'y.json', '{}');
    expect((await sweepUntilStoredPast(changed?.getTime() ?? 0)).etag).not.toBe(quiet.etag);
  });

  it('runs at most maxDegreeOfParallelism blobs at once (host.json: 4)', async () => {
    const blobs = Array.from({ length: 12 }, (_, i) => `p${i}`);
    await Promise.all(blobs.map((name) => upload('parallel', name, name)));
    // Each run logs how many were running as it began.
    const running = () =>
      log().flatMap((e) => {
        const found = /^parallel p\d+: (\d+) running$/.exec(e.message);
        return found ? [Number(found[1])] : [];
      });
    await waitFor('every parallel run', () => running().length === blobs.length);
    expect(Math.max(...running())).toBe(4);
  });

  it('puts a function whose connection is not set in error, as the storage extension does, and runs the others', async () => {
    const error =
      "The 'misconfigured' function is in error: Microsoft.Azure.WebJobs.Host: Error indexing method 'Functions.misconfigured'. Microsoft.Azure.WebJobs.Extensions.Storage.Blobs: Storage account connection string 'AzureWebJobsMissingConnection' does not exist. Make sure that it is a defined App Setting.";
    const messages = log().map((e) => e.message);
    expect(messages).toContain(error);
    expect(messages.filter((message) => message.includes("'Functions.misconfigured' was unable"))).toEqual(
      [],
    );
  });

  /** Asks the admin API to run ProcessTask on `input` (a blob's path). */
  const runByHand = (input: string) =>
    fetch(`${base()}/admin/functions/ProcessTask`, {
      method: 'POST',
      headers: { 'x-functions-key': secrets.masterKey, 'content-type': 'application/json' },
      body: JSON.stringify({ input }),
    });

  it('runs a blob function by hand through the admin API with the blob path as input', async () => {
    expect((await runByHand('tasks/b.json')).status).toBe(202);
    await waitFor('the manual run', () => count('processed b: {"Title":"B"}') === 2);
  });

  it('accepts a path whose blob is missing, as the runtime does, and fails that run in the log', async () => {
    expect((await runByHand('tasks/missing.json')).status).toBe(202);
    const failed = await waitFor('the failed run', () =>
      log().find(
        (e) =>
          e.function === 'ProcessTask' && e.message.startsWith("Executed 'Functions.ProcessTask' (Failed"),
      ),
    );
    const reason = log().find(
      (e) => e.invocationId === failed.invocationId && e.message.startsWith('Exception while executing'),
    );
    // The library names the trigger's parameter after its type and a hash of its binding.
    expect(reason?.message).toMatch(
      /Exception binding parameter 'blobTrigger[0-9a-f]+'\. The specified blob does not exist\./,
    );
  });
});

describe('blob output binding', () => {
  it('resolves {DateTime} and {rand-guid} in the path', async () => {
    const response = await fetch(`${base()}/api/saveNote`, { method: 'POST', body: 'note text' });
    expect(response.status).toBe(201);
    const [name] = await names('notes');
    expect(name).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.txt$/,
    );
    expect(await text('notes', name as string)).toBe('note text');
  });

  it('resolves a JSON body property, a query parameter, {query.x} and {headers.x} as the HTTP extension binds them', async () => {
    const response = await fetch(`${base()}/api/filed/7?v=2&code=secret`, {
      method: 'POST',
      headers: { 'x-tag': 'blue', 'content-type': 'application/json' },
      body: '{"title":"Report"}',
    });
    expect(response.status).toBe(204);
    expect(await text('tasks-copy', 'Report-2-2-blue-7.json')).toBe('{"title":"Report"}');
  });

  it('resolves route parameters ({id}) in the path', async () => {
    const response = await fetch(`${base()}/api/tasks/42`, { method: 'PUT', body: '{"Title":"X"}' });
    expect(response.status).toBe(204);
    expect(JSON.parse(await text('tasks-copy', '42.json'))).toEqual({ Title: 'X' });
  });
});
