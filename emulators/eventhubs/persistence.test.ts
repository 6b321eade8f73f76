/** Events survive a restart on the same state directory; retention trims them by the stack clock. */
import { appendFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { EventHubProducerClient, earliestEventPosition, type PartitionProperties } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../core/emulator.ts';
import { startEmulator } from '../core/testing.ts';
import eventhubs from './index.ts';
import { HUB, record, type Started, startEventHubs, waitFor } from './test-support.ts';

const DAY = 86_400_000;
let hub: Started;
let running: RunningEmulator;

beforeAll(async () => {
  hub = await startEventHubs();
  running = hub.running;
});

afterAll(async () => {
  await running?.stop();
  hub?.remove();
});

async function restart(): Promise<string> {
  await running.stop();
  running = await startEmulator(eventhubs, { port: 0 }, hub.context);
  return running.endpoints.connectionString as string;
}

async function properties(connectionString: string, partitionId: string): Promise<PartitionProperties> {
  const producer = new EventHubProducerClient(connectionString, HUB);
  try {
    return await producer.getPartitionProperties(partitionId);
  } finally {
    await producer.close();
  }
}

async function send(connectionString: string, partitionId: string, bodies: unknown[]) {
  const producer = new EventHubProducerClient(connectionString, HUB);
  try {
    await producer.sendBatch(
      bodies.map((body) => ({ body })),
      { partitionId },
    );
  } finally {
    await producer.close();
  }
}

async function receiveAll(connectionString: string, partitionId: string, count: number) {
  const rec = record(connectionString, partitionId, earliestEventPosition);
  try {
    await waitFor(() => rec.events.length >= count, `${count} events`);
    expect(rec.errors).toEqual([]);
    return rec.events.map((e) => ({
      seq: e.sequenceNumber,
      offset: e.offset,
      at: e.enqueuedTimeUtc,
      body: e.body,
    }));
  } finally {
    await rec.close();
  }
}

describe('Event Hubs persistence and retention', () => {
  it('keeps events, numbering and offsets across stop/start with the same state directory', async () => {
    let cs = hub.connectionString;
    await send(cs, '0', ['first', { n: 2 }, Buffer.from('third')]);
    await send(cs, '1', ['other partition']);
    const before = await receiveAll(cs, '0', 3);
    const props = await properties(cs, '0');

    cs = await restart();
    expect(cs).not.toBe(hub.connectionString);
    expect(await properties(cs, '0')).toEqual(props);
    expect(await receiveAll(cs, '0', 3)).toEqual(before);
    expect((await properties(cs, '1')).lastEnqueuedSequenceNumber).toBe(0);

    // Numbering continues where it stopped.
    await send(cs, '0', ['fourth']);
    expect((await properties(cs, '0')).lastEnqueuedSequenceNumber).toBe(3);
  });

  it('recovers from a record cut short by a crash: the whole records before it remain', async () => {
    const dir = join(hub.context.stateDir as string, HUB);
    expect(readdirSync(dir).sort()).toEqual(['0.log', '1.log', 'hub.json']);
    const props = await properties(running.endpoints.connectionString as string, '1');
    appendFileSync(join(dir, '1.log'), Buffer.from([0, 0, 1, 0, 0x40, 1]));
    const cs = await restart();
    expect(await properties(cs, '1')).toEqual(props);
    await send(cs, '1', ['after recovery']);
    expect((await receiveAll(cs, '1', 2)).map((e) => e.body)).toEqual(['other partition', 'after recovery']);
  });

  it('drops events older than the retention (1 day) by the stack clock; numbering never restarts', async () => {
    let cs = running.endpoints.connectionString as string;
    const old = await properties(cs, '0');
    expect(old.isEmpty).toBe(false);

    hub.context.clock.advance(DAY - 60_000);
    expect(await properties(cs, '0')).toEqual(old);
    await send(cs, '0', ['fresh']);
    hub.context.clock.advance(120_000);

    const trimmed = await properties(cs, '0');
    expect(trimmed).toMatchObject({
      beginningSequenceNumber: old.lastEnqueuedSequenceNumber + 1,
      lastEnqueuedSequenceNumber: old.lastEnqueuedSequenceNumber + 1,
      isEmpty: false,
    });
    expect((await receiveAll(cs, '0', 1)).map((e) => e.body)).toEqual(['fresh']);

    hub.context.clock.advance(DAY);
    const empty = await properties(cs, '0');
    expect(empty).toMatchObject({
      beginningSequenceNumber: trimmed.lastEnqueuedSequenceNumber + 1,
      lastEnqueuedSequenceNumber: trimmed.lastEnqueuedSequenceNumber,
      lastEnqueuedOffset: trimmed.lastEnqueuedOffset,
      isEmpty: true,
    });

    // The emptied partition keeps its counters across a restart, and new events continue the numbering.
    cs = await restart();
    expect(await properties(cs, '0')).toEqual(empty);
    await send(cs, '0', ['next']);
    const [next] = await receiveAll(cs, '0', 1);
    expect(next).toMatchObject({ seq: empty.lastEnqueuedSequenceNumber + 1, body: 'next' });
    expect(Number(next?.offset)).toBeGreaterThan(Number(empty.lastEnqueuedOffset));
  });
});
