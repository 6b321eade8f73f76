/**
 * The consumer client with the blob checkpoint store (Azurite via the blob emulator): partitions are
 * claimed, checkpoints written, and a new processor resumes after the last checkpoint.
 */
import {
  EventHubConsumerClient,
  EventHubProducerClient,
  earliestEventPosition,
  type ReceivedEventData,
} from '@azure/event-hubs';
import { BlobCheckpointStore } from '@azure/eventhubs-checkpointstore-blob';
import { ContainerClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import blob from '../blob/index.ts';
import type { RunningEmulator } from '../core/emulator.ts';
import { startEmulator } from '../core/testing.ts';
import { HUB, type Started, startEventHubs, waitFor } from './test-support.ts';

let hub: Started;
let storage: RunningEmulator;
let container: ContainerClient;

beforeAll(async () => {
  hub = await startEventHubs({ inMemory: true });
  storage = await startEmulator(blob, { port: 0 }, hub.context);
  container = new ContainerClient(storage.endpoints.connectionString as string, 'checkpoints');
  await container.create();
});

afterAll(async () => {
  await storage?.stop();
  await hub?.running.stop();
  hub?.remove();
});

/** Runs a processor until it has seen `count` events, checkpointing after each batch. */
async function runProcessor(count: number): Promise<ReceivedEventData[]> {
  const consumer = new EventHubConsumerClient(
    '$default',
    hub.connectionString,
    HUB,
    new BlobCheckpointStore(container),
    // Claim every partition in the first load-balancing round instead of one per 10 s round.
    { loadBalancingOptions: { strategy: 'greedy', updateIntervalInMs: 200 } },
  );
  const seen: ReceivedEventData[] = [];
  const errors: Error[] = [];
  const subscription = consumer.subscribe(
    {
      processEvents: async (events, context) => {
        seen.push(...events);
        const last = events.at(-1);
        if (last) await context.updateCheckpoint(last);
      },
      processError: async (error) => {
        errors.push(error);
      },
    },
    {
      // Without a checkpoint a partition starts from the beginning; once one exists, after it.
      startPosition: earliestEventPosition,
      maxWaitTimeInSeconds: 0.2,
    },
  );
  try {
    await waitFor(() => seen.length >= count, `${count} events through the processor`);
    expect(errors).toEqual([]);
    return seen;
  } finally {
    await subscription.close();
    await consumer.close();
  }
}

describe('Event Hubs with the blob checkpoint store', () => {
  it('claims both partitions, checkpoints, and resumes after the checkpoint', async () => {
    const producer = new EventHubProducerClient(hub.connectionString, HUB);
    try {
      await producer.sendBatch([{ body: 'a0' }, { body: 'a1' }], { partitionId: '0' });
      await producer.sendBatch([{ body: 'b0' }], { partitionId: '1' });
      const first = await runProcessor(3);
      expect(first.map((e) => e.body).sort()).toEqual(['a0', 'a1', 'b0']);

      const names: string[] = [];
      for await (const item of container.listBlobsFlat()) names.push(item.name);
      const prefix = `127.0.0.1/${HUB}/$default`;
      expect(names.filter((n) => n.startsWith(`${prefix}/checkpoint/`)).sort()).toEqual([
        `${prefix}/checkpoint/0`,
        `${prefix}/checkpoint/1`,
      ]);
      expect(names.filter((n) => n.startsWith(`${prefix}/ownership/`))).toHaveLength(2);

      await producer.sendBatch([{ body: 'a2' }], { partitionId: '0' });
      await producer.sendBatch([{ body: 'b1' }], { partitionId: '1' });
      const second = await runProcessor(2);
      expect(second.map((e) => e.body).sort()).toEqual(['a2', 'b1']);
    } finally {
      await producer.close();
    }
  });
});
