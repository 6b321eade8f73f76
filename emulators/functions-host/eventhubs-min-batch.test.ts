/**
 * The Event Hubs trigger's host.json `minEventBatchSize` and `maxWaitTime`, as the extension's
 * PartitionProcessor honours them for a function taking many events, fed by the official producer: a
 * partition's events are held until there are enough, or until `maxWaitTime` (stack time) has passed;
 * held events are never checkpointed, so a stop loses none of them.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import {
  appWithHostJson,
  type EventHubsStores,
  eventsLogged,
  readLog,
  startEsmHostOnEventHubs,
  startEventHubsStores,
} from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
const MINUTE = 60_000;
let host: ComponentUnderTest;
let appDir: string;
let stores: EventHubsStores;

const send = (...bodies: string[]) =>
  stores.producer.sendBatch(
    bodies.map((body) => ({ body })),
    { partitionId: '0' },
  );
const ran = (body: string) => eventsLogged(logFile, body);
/** The host's lines for events it holds (the extension's Debug line, with what is held). */
const held = () =>
  readLog(logFile).filter((e) =>
    e.message.includes(
      'Partition Processor received events but has less than MinBatchSize total events. Waiting for more events',
    ),
  );
/** The batch sizes the function logged, in order. */
const batches = () =>
  readLog(logFile)
    .filter((e) => e.message.startsWith('batch of '))
    .map((e) => Number(e.message.slice('batch of '.length)));
/** Partition 0's checkpoint: the sequence number it holds. */
async function checkpointed(): Promise<number | undefined> {
  const blob = stores.storage
    .getContainerClient('azure-webjobs-eventhub')
    .getBlobClient('127.0.0.1/taskevents/$default/checkpoint/0');
  if (!(await blob.exists())) return undefined;
  return Number((await blob.getProperties()).metadata?.sequencenumber);
}
const sequenceOf = (body: string) => Number(/ seq=(\d+) /.exec(ran(body)[0]?.message ?? '')?.[1]);

beforeAll(async () => {
  stores = await startEventHubsStores(data.dir);
  const eventHubs = { maxEventBatchSize: 5, minEventBatchSize: 3, maxWaitTime: '00:05:00' };
  const hostJson = JSON.stringify({
    version: '2.0',
    logging: { logLevel: { 'Host.General': 'Debug' } },
    extensions: { http: { routePrefix: '' }, eventHubs },
  });
  appDir = appWithHostJson('app-esm', join(data.dir, 'app-min-batch'), hostJson);
  host = await startEsmHostOnEventHubs(stores, data.dir, logFile, 'oneAtATime', appDir);
});

afterAll(async () => {
  await host?.stop();
  await stores?.stop();
  data.remove();
});

it('runs the first events at once when the partition has no checkpoint (the first wait is then 0)', async () => {
  await send('a1');
  await waitFor('a1 run', () => ran('a1').length === 1, 30_000);
  expect(batches()).toEqual([1]);
  await waitFor('the checkpoint at a1', async () => (await checkpointed()) === sequenceOf('a1'));
});

it('holds events below minEventBatchSize, and runs them once it is reached', async () => {
  await send('b1', 'b2');
  await waitFor('b1 and b2 held', () => held().some((e) => e.message.includes('2 held')), 20_000);
  expect(ran('b1')).toEqual([]);
  await send('b3');
  await waitFor('b1 to b3 run', () => ran('b3').length === 1);
  expect(batches()).toEqual([1, 3]);
  expect(['b1', 'b2'].map((body) => ran(body).length)).toEqual([1, 1]);
  await waitFor('the checkpoint at b3', async () => (await checkpointed()) === sequenceOf('b3'));
});

it('runs what it holds as a partial batch once maxWaitTime has passed on the stack clock, and checkpoints it', async () => {
  const before = held().length;
  await send('c1');
  await waitFor('c1 held', () => held().length > before, 20_000);
  expect(ran('c1')).toEqual([]);
  await host.advanceClock(5 * MINUTE);
  await waitFor('c1 run', () => ran('c1').length === 1);
  expect(batches()).toEqual([1, 3, 1]);
  await waitFor('the checkpoint at c1', async () => (await checkpointed()) === sequenceOf('c1'));
});

it('loses no held event to a stop: the next start reads them again from the checkpoint, its first wait shortened by the time since that checkpoint', async () => {
  const before = held().length;
  await send('d1', 'd2');
  await waitFor('d1 and d2 held', () => held().length > before, 20_000);
  await host.stop();
  expect(ran('d1')).toEqual([]);
  expect(await checkpointed()).toBe(sequenceOf('c1'));
  // Four of the five minutes pass while the host is down: the first wait after the start is about one.
  await host.advanceClock(4 * MINUTE);
  const heldBefore = held().length;
  await host.start();
  await waitFor('d1 and d2 held again', () => held().length > heldBefore, 30_000);
  await host.advanceClock(1.5 * MINUTE);
  await waitFor('d1 and d2 run', () => ran('d2').length === 1);
  expect(ran('d1').length).toBe(1);
  expect(batches()).toEqual([1, 3, 1, 2]);
  await waitFor('the checkpoint at d2', async () => (await checkpointed()) === sequenceOf('d2'));
});

it('holds nothing for a function taking one event at a time, as the extension dispatches those singly', async () => {
  await host.stop();
  // The same consumer group: the one-at-a-time function reads on from the checkpoint at d2.
  host = await startEsmHostOnEventHubs(stores, data.dir, logFile, 'ProcessTaskEvents', appDir);
  const before = held().length;
  await send('e1');
  await waitFor('e1 run', () => readLog(logFile).some((e) => e.message.startsWith('one true e1 ')), 30_000);
  expect(held().length).toBe(before);
});
