/** The namespace's tier bounds what the topology may declare, as Azure's quotas do, and what links accept. */
import { EventHubProducerClient } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type TestContext, testContext, testDataDir } from '../core/testing.ts';
import eventhubs from './index.ts';
import type { HubDefinition } from './service/namespace.ts';
import { HUB } from './test-support.ts';

let context: TestContext;
let remove: () => void;

beforeAll(async () => {
  const data = testDataDir();
  remove = data.remove;
  context = await testContext(data.dir, { inMemory: true });
});
afterAll(() => remove?.());

/** Starts the emulator on a namespace of `sku` holding `hubs`. */
function startWith(sku: string, hubs: HubDefinition[]) {
  const eventHubs = { ...context.topology.eventHubs, sku, hubs };
  return startEmulator(
    eventhubs,
    { port: 0, tlsPort: 0 },
    { ...context, topology: { ...context.topology, eventHubs } },
  );
}

const hub = (name: string, partitionCount: number, messageRetentionInDays: number) => ({
  name,
  partitionCount,
  messageRetentionInDays,
});

describe('Event Hubs tiers', () => {
  it('refuses to start a namespace its tier cannot hold, naming each misfit', async () => {
    await expect(startWith('Basic', [hub(HUB, 2, 3)])).rejects.toThrow(
      "the Event Hubs Basic tier cannot hold this namespace: hub 'taskevents': retention of 3 days (a whole number from 1 to 1)",
    );
    await expect(
      startWith('Standard', [hub(HUB, 33, 7), hub('TaskEvents', 2, 0.5), hub('audit', 2, 8)]),
    ).rejects.toThrow(
      "the Event Hubs Standard tier cannot hold this namespace: hub 'taskevents': 33 partitions (at most 32); hub 'TaskEvents' declared twice; hub 'TaskEvents': retention of 0.5 days (a whole number from 1 to 7); hub 'audit': retention of 8 days (a whole number from 1 to 7)",
    );
    const eleven = Array.from({ length: 11 }, (_, i) => hub(`hub${i}`, 1, 1));
    await expect(startWith('Basic', eleven)).rejects.toThrow(
      'the Event Hubs Basic tier cannot hold this namespace: 11 event hubs (at most 10 per namespace)',
    );
  });

  it("starts what the tier holds, and links take the tier's largest message", async () => {
    const running = await startWith('Standard', [hub(HUB, 32, 7)]);
    const producer = new EventHubProducerClient(running.endpoints.connectionString as string, HUB);
    try {
      expect((await producer.getEventHubProperties()).partitionIds).toHaveLength(32);
      expect((await producer.createBatch()).maxSizeInBytes).toBe(1024 * 1024);
    } finally {
      await producer.close();
      await running.stop();
    }
  });
});
