/** The official SDK against the emulator: hub/partition properties, sending, receiving from each position. */
import {
  EventHubProducerClient,
  earliestEventPosition,
  latestEventPosition,
  type ReceivedEventData,
} from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUB, record, type Started, startEventHubs, waitFor } from './test-support.ts';

let hub: Started;
let producer: EventHubProducerClient;

beforeAll(async () => {
  hub = await startEventHubs({ inMemory: true });
  producer = new EventHubProducerClient(hub.connectionString, HUB);
});

afterAll(async () => {
  await producer?.close();
  await hub?.running.stop();
  hub?.remove();
});

const summary = (e: ReceivedEventData) => ({
  body: e.body,
  properties: e.properties,
  partitionKey: e.partitionKey,
});

describe('Event Hubs emulator with @azure/event-hubs', () => {
  it('answers hub and partition properties', async () => {
    await hub.running.health();
    expect(hub.connectionString).toMatch(
      /^Endpoint=sb:\/\/127\.0\.0\.1:\d+;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=.+;UseDevelopmentEmulator=true$/,
    );
    const props = await producer.getEventHubProperties();
    expect(props.name).toBe(HUB);
    expect(props.partitionIds).toEqual(['0', '1']);
    expect(props.createdOn).toBeInstanceOf(Date);
    expect(props.createdOn.getTime()).toBeLessThanOrEqual(hub.context.clock.now());

    const empty = await producer.getPartitionProperties('1');
    expect(empty).toMatchObject({
      partitionId: '1',
      eventHubName: HUB,
      beginningSequenceNumber: 0,
      lastEnqueuedSequenceNumber: -1,
      lastEnqueuedOffset: '-1',
      isEmpty: true,
    });
  });

  it('sends a batch to a partition and receives it from earliest, in order, bodies and properties intact', async () => {
    const before = await producer.getPartitionProperties('0');
    const batch = await producer.createBatch({ partitionId: '0' });
    const sent = [
      { body: 'plain text', properties: { kind: 'string', n: 1, flag: true } },
      { body: { title: 'Write tests', done: false, tags: ['a', 'b'] }, properties: { kind: 'json' } },
      { body: Buffer.from([0, 1, 2, 254, 255]), properties: { kind: 'binary', ratio: 0.5 } },
    ];
    for (const event of sent) expect(batch.tryAdd(event)).toBe(true);
    await producer.sendBatch(batch);

    const after = await producer.getPartitionProperties('0');
    expect(after.lastEnqueuedSequenceNumber).toBe(before.lastEnqueuedSequenceNumber + 3);
    expect(after.isEmpty).toBe(false);

    const rec = record(hub.connectionString, '0', earliestEventPosition);
    try {
      await waitFor(() => rec.events.length >= after.lastEnqueuedSequenceNumber + 1, 'events from earliest');
      const mine = rec.events.slice(-3);
      expect(mine.map(summary)).toEqual(sent.map((e) => ({ ...e, partitionKey: undefined })));
      expect(rec.events.map((e) => e.sequenceNumber)).toEqual(rec.events.map((_, i) => i));
      const offsets = mine.map((e) => Number(e.offset));
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      expect(mine.at(-1)?.offset).toBe(after.lastEnqueuedOffset);
      for (const e of mine) {
        expect(typeof e.offset).toBe('string');
        expect(e.enqueuedTimeUtc.getTime()).toBe(after.lastEnqueuedOnUtc.getTime());
      }
      expect(rec.errors).toEqual([]);
    } finally {
      await rec.close();
    }
  });

  it('places events by partition key hash, and spreads keyless sends round robin', async () => {
    // 'task-1' → partition 1 and 'task-2' → partition 0 under Event Hubs' hash (as the SDK's mapper says).
    const one = await producer.getPartitionProperties('1');
    const zero = await producer.getPartitionProperties('0');
    await producer.sendBatch([{ body: 'k1' }], { partitionKey: 'task-1' });
    await producer.sendBatch([{ body: 'k2' }], { partitionKey: 'task-2' });
    expect((await producer.getPartitionProperties('1')).lastEnqueuedSequenceNumber).toBe(
      one.lastEnqueuedSequenceNumber + 1,
    );
    expect((await producer.getPartitionProperties('0')).lastEnqueuedSequenceNumber).toBe(
      zero.lastEnqueuedSequenceNumber + 1,
    );

    const rec = record(hub.connectionString, '1', { sequenceNumber: one.lastEnqueuedSequenceNumber });
    try {
      await waitFor(() => rec.events.length === 1, 'the keyed event');
      expect(rec.events[0]).toMatchObject({ body: 'k1', partitionKey: 'task-1' });
    } finally {
      await rec.close();
    }

    const counts = async () =>
      Promise.all(
        ['0', '1'].map(async (id) => (await producer.getPartitionProperties(id)).lastEnqueuedSequenceNumber),
      );
    const start = await counts();
    for (let i = 0; i < 4; i++) await producer.sendBatch([{ body: `rr${i}` }]);
    const end = await counts();
    expect(end.map((n, i) => n - (start[i] as number))).toEqual([2, 2]);
  });

  it('starts from latest: only what is sent after the receiver attached', async () => {
    await producer.sendBatch([{ body: 'old' }], { partitionId: '1' });
    const rec = record(hub.connectionString, '1', latestEventPosition);
    try {
      await waitFor(rec.ready, 'the latest receiver to attach');
      await producer.sendBatch([{ body: 'new 1' }, { body: 'new 2' }], { partitionId: '1' });
      await waitFor(() => rec.events.length === 2, 'two new events');
      expect(rec.events.map((e) => e.body)).toEqual(['new 1', 'new 2']);
    } finally {
      await rec.close();
    }
  });

  it('starts from a sequence number (exclusive and inclusive) and from an enqueued time', async () => {
    const base = (await producer.getPartitionProperties('0')).lastEnqueuedSequenceNumber + 1;
    await producer.sendBatch(
      [0, 1, 2, 3, 4].map((i) => ({ body: `s${i}` })),
      { partitionId: '0' },
    );
    const exclusive = record(hub.connectionString, '0', { sequenceNumber: base + 2 });
    const inclusive = record(hub.connectionString, '0', { sequenceNumber: base + 2, isInclusive: true });
    try {
      await waitFor(
        () => exclusive.events.length === 2 && inclusive.events.length === 3,
        'events after the position',
      );
      expect(exclusive.events.map((e) => e.body)).toEqual(['s3', 's4']);
      expect(inclusive.events.map((e) => [e.sequenceNumber, e.body])).toEqual([
        [base + 2, 's2'],
        [base + 3, 's3'],
        [base + 4, 's4'],
      ]);
    } finally {
      await Promise.all([exclusive.close(), inclusive.close()]);
    }

    const marker = hub.context.clock.now();
    hub.context.clock.advance(1000);
    await producer.sendBatch([{ body: 'after the mark' }], { partitionId: '0' });
    const byTime = record(hub.connectionString, '0', { enqueuedOn: marker });
    try {
      await waitFor(() => byTime.events.length === 1, 'the event after the time mark');
      expect(byTime.events[0]?.body).toBe('after the mark');
    } finally {
      await byTime.close();
    }
  });

  it('reports the runtime metric (last enqueued event) when asked to track it', async () => {
    await producer.sendBatch([{ body: 'tracked' }], { partitionId: '1' });
    const last = await producer.getPartitionProperties('1');
    const rec = record(
      hub.connectionString,
      '1',
      { sequenceNumber: last.lastEnqueuedSequenceNumber, isInclusive: true },
      {
        trackLastEnqueuedEventProperties: true,
      },
    );
    try {
      await waitFor(() => rec.events.length === 1, 'the tracked event');
    } finally {
      await rec.close();
    }
    expect(rec.events[0]?.body).toBe('tracked');
    expect(rec.lastEnqueued()).toMatchObject({
      sequenceNumber: last.lastEnqueuedSequenceNumber,
      offset: last.lastEnqueuedOffset,
      enqueuedOn: last.lastEnqueuedOnUtc,
    });
  });
});
