/**
 * Retry policies (WebJobs' FunctionExecutorExtensions): a timer retried on the stack clock and its
 * occurrence recorded once, exponential backoff growing to its cap, an Event Hubs event retried before
 * its checkpoint, a policy exhausted: the trigger moves on, and host.json's policy for a function
 * without its own.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { downloadBlob } from './connections.ts';
import { appPath, type EventHubsStores, readLog, startEventHubsStores } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
const WAIT = 20_000;
let host: ComponentUnderTest | undefined;
let stores: EventHubsStores;
let midnight: string;

async function startHost() {
  await host?.stop();
  const settings = {
    AzureWebJobsStorage: stores.blob.endpoints.connectionString as string,
    StreamHubConnection: stores.eventHubs.endpoints.connectionString as string,
  };
  host = await startComponent(
    'functions',
    { port: 0, appDir: appPath('app-retry'), logFile, settings },
    data.dir,
  );
}

const lines = (fn: string, start: string) =>
  readLog(logFile).filter((e) => e.function === fn && e.message.startsWith(start));
const runs = (key: string) =>
  readLog(logFile)
    .filter((e) => e.message.startsWith(`${key} run `))
    .map((e) => e.message);
const waits = (fn: string) => lines(fn, 'Waiting for `').map((e) => e.message);
const delayOf = (message: string) => {
  const [, h, m, s] = /`(\d\d):(\d\d):(\d\d(?:\.\d+)?)`/.exec(message) ?? [];
  return ((Number(h) * 60 + Number(m)) * 60 + Number(s)) * 1000;
};
const status = async (fn: string) => {
  const container = stores.storage.getContainerClient('azure-webjobs-hosts');
  for await (const item of container.listBlobsFlat({ prefix: 'timers/' }))
    if (item.name.endsWith(`/Host.Functions.${fn}/status`))
      return JSON.parse((await downloadBlob(container.getBlobClient(item.name))).content.toString()) as {
        Last: string;
        Next: string;
      };
  return undefined;
};
/** Waits for retry wait `n` (1-based) of `fn`, then moves the stack clock by its delay. */
async function retryAfter(fn: string, n: number) {
  const message = await waitFor(`wait ${n} of ${fn}`, () => waits(fn)[n - 1], WAIT);
  await host?.advanceClock(delayOf(message));
  return delayOf(message);
}

beforeAll(async () => {
  stores = await startEventHubsStores(data.dir);
  await startHost();
});

afterAll(async () => {
  await host?.stop();
  await stores?.stop();
  data.remove();
});

describe('triggers without retry support', () => {
  it("warn at start in WebJobs' words (FunctionIndexer.CheckRetrySupport)", () => {
    const messages = readLog(logFile).map((e) => e.message);
    // withRetry has its own policy, plain host.json's.
    expect(messages.filter((m) => m.startsWith('Soon retries')).sort()).toEqual(
      ['plain', 'withRetry'].map(
        (fn) =>
          `Soon retries will not be supported for function 'Functions.${fn}'. For more information, please visit http://aka.ms/func-retry-policies.`,
      ),
    );
  });
});

describe('timer retry policies', () => {
  it('retries a failing timer on the stack clock (fixedDelay) and records its occurrence once', async () => {
    const before = await waitFor('the status of flaky', () => status('flaky'), WAIT);
    midnight = (await waitFor('the status of backoff', () => status('backoff'), WAIT)).Next;
    // Both timers run at midnight: move the clock a second past it.
    await host?.advanceClock(Date.parse(before.Next) - Date.now() + 1000);
    expect(await retryAfter('flaky', 1)).toBe(300_000);
    await retryAfter('flaky', 2);
    await waitFor('the third run', () => runs('flaky')[2], WAIT);
    expect(runs('flaky')).toEqual([
      'flaky run 1 retry=0/3',
      'flaky run 2 retry=1/3',
      'flaky run 3 retry=2/3',
    ]);
    expect(waits('flaky')).toEqual([
      "Waiting for `00:05:00` before retrying function execution. Next attempt: '1'. Max retry count: '3'.",
      "Waiting for `00:05:00` before retrying function execution. Next attempt: '2'. Max retry count: '3'.",
    ]);
    const after = await waitFor('the recorded run', async () => {
      const now = await status('flaky');
      return now && now.Next !== before.Next && now;
    });
    // One record, at the occurrence (not at a retry ten minutes later); the next is a day on.
    expect(Date.parse(after.Last) - Date.parse(before.Next)).toBeLessThan(60_000);
    expect(Date.parse(after.Next) - Date.parse(before.Next)).toBe(86_400_000);
  }, 120_000);

  it('grows exponential backoff delays up to maximumInterval, then gives up and moves on', async () => {
    const delays: number[] = [];
    for (let n = 1; n <= 5; n++) delays.push(await retryAfter('backoff', n));
    await waitFor(
      'the end of the retries',
      () => lines('backoff', "Function execution failed after '5' retries.")[0],
      WAIT,
    );
    expect(runs('backoff')).toHaveLength(6);
    expect(delays[0]).toBe(2000);
    for (let n = 1; n < 5; n++) expect(delays[n]).toBeGreaterThanOrEqual(delays[n - 1] as number);
    expect(delays[1]).toBeGreaterThan(2000);
    expect(Math.max(...delays)).toBe(6000);
    expect(delays.at(-1)).toBe(6000);
    // As without a policy: the occurrence is recorded and the next one scheduled.
    await waitFor('the recorded run', async () => (await status('backoff'))?.Next !== midnight && true, WAIT);
  }, 120_000);

  it("applies host.json's retry to a function without its own (ScriptHost.CreateTypeAttributes)", async () => {
    // It ran at midnight with the others; their waits moved the clock less than its 30 minutes.
    expect(await retryAfter('hostRetry', 1)).toBe(1_800_000);
    await waitFor(
      'the end of the retries',
      () => lines('hostRetry', "Function execution failed after '1' retries.")[0],
      WAIT,
    );
    expect(runs('hostRetry')).toEqual(['hostRetry run 1 retry=0/1', 'hostRetry run 2 retry=1/1']);
    expect(waits('hostRetry')).toEqual([
      "Waiting for `00:30:00` before retrying function execution. Next attempt: '1'. Max retry count: '1'.",
    ]);
  });
});

describe('Event Hubs retry policy', () => {
  it('retries a failed event before its checkpoint: not delivered again after a restart', async () => {
    await stores.producer.sendBatch([{ body: 'once-1' }], { partitionId: '0' });
    expect(await retryAfter('events', 1)).toBe(10_000);
    await waitFor('the retry', () => runs('once-1')[1], WAIT);
    expect(runs('once-1')).toEqual(['once-1 run 1 retry=0/2', 'once-1 run 2 retry=1/2']);
  });

  it('moves on past an event whose retries are exhausted, with its checkpoint', async () => {
    await stores.producer.sendBatch([{ body: 'always-1' }, { body: 'after-1' }], { partitionId: '0' });
    await retryAfter('events', 2);
    await retryAfter('events', 3);
    await waitFor('the next event', () => runs('after-1')[0], WAIT);
    expect(runs('always-1')).toHaveLength(3);
    expect(lines('events', "Function execution failed after '2' retries.")).toHaveLength(1);

    await startHost();
    await stores.producer.sendBatch([{ body: 'marker' }], { partitionId: '0' });
    await waitFor('the marker', () => runs('marker')[0], WAIT);
    expect(runs('once-1')).toHaveLength(2);
    expect(runs('always-1')).toHaveLength(3);
    expect(runs('after-1')).toHaveLength(1);
  });
});
