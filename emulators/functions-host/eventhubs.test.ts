/**
 * The Event Hubs trigger against the stack's Event Hubs emulator and Azurite, fed with the official
 * producer: batches and metadata, checkpoints in azure-webjobs-eventhub, no repeats across a restart or a
 * crash, cardinality one with binary data.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import {
  type EventHubsStores,
  eventsLogged,
  readLog,
  startEsmHostOnEventHubs,
  startEventHubsStores,
} from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let host: ComponentUnderTest | undefined;
let stores: EventHubsStores;

const messages = (text: string) => eventsLogged(logFile, text);

async function startHost(disabled: string) {
  await host?.stop();
  host = await startEsmHostOnEventHubs(stores, data.dir, logFile, disabled);
}

beforeAll(async () => {
  stores = await startEventHubsStores(data.dir);
  await startHost('oneAtATime');
});

afterAll(async () => {
  await host?.stop();
  await stores?.stop();
  data.remove();
});

describe('Event Hubs trigger, cardinality many', () => {
  it('delivers batches (maxEventBatchSize 2) with the metadata arrays', async () => {
    const batch = await stores.producer.createBatch({ partitionId: '0' });
    for (const n of [1, 2, 3]) batch.tryAdd({ body: `task-${n}`, properties: { n } });
    await stores.producer.sendBatch(batch);
    await stores.producer.sendBatch([{ body: 'task-4' }], { partitionId: '1' });
    for (const n of [1, 2, 3, 4]) await waitFor(`task-${n}`, () => messages(`task-${n}`).length === 1);
    const sizes = readLog(logFile)
      .filter((e) => e.message.startsWith('batch of'))
      .map((e) => Number(e.message.slice('batch of '.length)));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(2);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(4);
    const first = messages('task-1')[0]?.message ?? '';
    expect(first).toMatch(/^message "task-1" seq=\d+ partition=0 props=\{"n":1\} sys=\{/);
    // The system properties as the extension gives them: the AMQP ones, then the same facts by name.
    const seq = Number(/ seq=(\d+) /.exec(first)?.[1]);
    const sys = JSON.parse(first.slice(first.indexOf(' sys=') + 5)) as Record<string, unknown>;
    expect(sys).toMatchObject({ 'x-opt-sequence-number': seq, sequenceNumber: seq, partitionKey: null });
    expect(sys.offset).toBe(Number(sys['x-opt-offset']));
    expect(sys.enqueuedTimeUtc).toBe(sys['x-opt-enqueued-time']);
    expect(messages('task-4')[0]?.message).toMatch(/ partition=1 /);
  });

  it('checkpoints in azure-webjobs-eventhub with the extension layout', async () => {
    const container = stores.storage.getContainerClient('azure-webjobs-eventhub');
    const checkpoints = await waitFor('both checkpoints', async () => {
      const found: string[] = [];
      for await (const item of container.listBlobsFlat({ includeMetadata: true })) {
        if (item.name.includes('/checkpoint/')) found.push(item.name);
      }
      return found.length === 2 && found;
    });
    expect(checkpoints.sort()).toEqual([
      expect.stringMatching(/^127\.0\.0\.1\/taskevents\/\$default\/checkpoint\/0$/),
      expect.stringMatching(/^127\.0\.0\.1\/taskevents\/\$default\/checkpoint\/1$/),
    ]);
  });

  it('resumes after the checkpoints when the host restarts: nothing runs twice', async () => {
    const previous = host as ComponentUnderTest;
    await startHost('oneAtATime');
    // Its stop released the partitions and the process exited by itself, within the stop grace.
    expect(previous.output.join('\n')).not.toContain('did not stop within');
    await stores.producer.sendBatch([{ body: 'after-restart' }], { partitionId: '0' });
    await waitFor('after-restart', () => messages('after-restart').length === 1);
    for (const n of [1, 2, 3, 4]) expect(messages(`task-${n}`)).toHaveLength(1);
  });

  it('resumes after the checkpoints when the host process is killed and restarted', async () => {
    const current = host as ComponentUnderTest;
    const started = current.output.filter((line) => line.startsWith('Host started')).length;
    current.kill();
    await waitFor(
      'the restarted host',
      () => current.output.filter((line) => line.startsWith('Host started')).length > started,
      20_000,
    );
    await stores.producer.sendBatch([{ body: 'after-crash' }], { partitionId: '1' });
    await waitFor('after-crash', () => messages('after-crash').length === 1, 60_000);
    for (const text of ['task-1', 'task-4', 'after-restart']) expect(messages(text)).toHaveLength(1);
  });
});

describe('Event Hubs trigger, cardinality one', () => {
  it('runs once per event with binary data and single-event metadata', async () => {
    await startHost('ProcessTaskEvents');
    await stores.producer.sendBatch([{ body: 'single-a' }, { body: 'single-b' }], { partitionId: '0' });
    const ones = await waitFor('both single events', () => {
      const found = readLog(logFile).filter((e) => e.message.startsWith('one true single-'));
      return found.length === 2 && found;
    });
    expect(ones.map((e) => e.message)).toEqual([
      // A single event's Offset is the extension's long (an array's offsets are strings).
      expect.stringMatching(/^one true single-a seq=\d+ offset=number$/),
      expect.stringMatching(/^one true single-b seq=\d+ offset=number$/),
    ]);
    expect(ones[0]?.invocationId).not.toBe(ones[1]?.invocationId);
    // Its retry policy applies (retry.test.ts): no warning about it.
    expect(
      readLog(logFile).some((e) =>
        e.message.includes("retries will not be supported for function 'Functions.oneAtATime'"),
      ),
    ).toBe(false);
    // Resumed from the checkpoints the batch function left: nothing older was delivered.
    expect(readLog(logFile).some((e) => e.message.startsWith('one true task-'))).toBe(false);
  });
});
