/**
 * Throughput of the emulator through the official SDK: batches of small events sent to one partition,
 * then read back from the start by one consumer. Bounded: a fixed number of events, a few seconds.
 */
import { performance } from 'node:perf_hooks';
import { EventHubConsumerClient, EventHubProducerClient, earliestEventPosition } from '@azure/event-hubs';
import { startEmulator, testContext, testDataDir } from '../core/testing.ts';
import eventhubs from './index.ts';

const HUB = 'taskevents';

export async function benchEventHubs(
  events = 20_000,
  batchSize = 250,
): Promise<{ sendEventsPerSec: number; receiveEventsPerSec: number }> {
  const { dir, remove } = testDataDir();
  const running = await startEmulator(eventhubs, { port: 0 }, await testContext(dir, { inMemory: true }));
  const connectionString = running.endpoints.connectionString as string;
  const producer = new EventHubProducerClient(connectionString, HUB);
  const consumer = new EventHubConsumerClient('$default', connectionString, HUB);
  try {
    const body = {
      id: '00000000-0000-0000-0000-000000000000',
      Title: 'Benchmark task',
      DueDate: '2030-01-01',
    };
    await producer.sendBatch([{ body }], { partitionId: '0' }); // links and token before the clock starts
    const sendStart = performance.now();
    for (let sent = 0; sent < events; sent += batchSize) {
      await producer.sendBatch(
        Array.from({ length: Math.min(batchSize, events - sent) }, () => ({ body })),
        { partitionId: '0' },
      );
    }
    const sendEventsPerSec = events / ((performance.now() - sendStart) / 1000);

    const total = events + 1;
    let received = 0;
    const receiveStart = performance.now();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`received ${received} of ${total} events in 30 s`)),
        30_000,
      );
      const subscription = consumer.subscribe(
        '0',
        {
          processEvents: async (batch) => {
            received += batch.length;
            if (received >= total) {
              clearTimeout(timer);
              await subscription.close();
              resolve();
            }
          },
          processError: async (error) => reject(error),
        },
        {
          startPosition: earliestEventPosition,
          maxBatchSize: 1000,
          prefetchCount: 2000,
          maxWaitTimeInSeconds: 1,
        },
      );
    });
    const receiveEventsPerSec = total / ((performance.now() - receiveStart) / 1000);
    return {
      sendEventsPerSec: Math.round(sendEventsPerSec),
      receiveEventsPerSec: Math.round(receiveEventsPerSec),
    };
  } finally {
    await consumer.close();
    await producer.close();
    await running.stop();
    remove();
  }
}
