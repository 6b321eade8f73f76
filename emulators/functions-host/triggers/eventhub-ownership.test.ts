/**
 * Giving up a partition whose receiver ended, against Azurite through the official blob checkpoint store,
 * while the processor's own load balancing renews that ownership from a list it read before the receiver
 * ended (it took the partition for one it was still reading): the give-up must win, or the partition idles
 * until its ownership expires.
 */
import type { CheckpointStore, PartitionOwnership } from '@azure/event-hubs';
import { BlobCheckpointStore } from '@azure/eventhubs-checkpointstore-blob';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testDataDir } from '../../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../../stack/test-support.ts';
import { abandonOwnership } from './eventhub-ownership.ts';

const data = testDataDir();
let blob: ComponentUnderTest;
let store: BlobCheckpointStore;
const scope = { fullyQualifiedNamespace: '127.0.0.1', eventHubName: 'taskevents', consumerGroup: '$default' };
const me = 'host-many';

beforeAll(async () => {
  blob = await startComponent('blob', { port: 0 }, data.dir);
  const service = BlobServiceClient.fromConnectionString(blob.endpoints.connectionString as string);
  const container = service.getContainerClient('azure-webjobs-eventhub');
  await container.create();
  store = new BlobCheckpointStore(container);
});

afterAll(async () => {
  await blob?.stop();
  data.remove();
});

const list = () =>
  store.listOwnership(scope.fullyQualifiedNamespace, scope.eventHubName, scope.consumerGroup);
const owner = async (partitionId: string) =>
  (await list()).find((o) => o.partitionId === partitionId)?.ownerId;

it('gives up a partition even when load balancing renews it between the list and the write', async () => {
  const claim = (partitionId: string, etag?: string) =>
    store.claimOwnership([{ ...scope, partitionId, ownerId: me, etag }]);
  await claim('0');
  await claim('1');
  // The load-balancing round that read the ownerships before partition 1's receiver ended renews it with
  // the ETag that round read: it lands after the give-up listed the ownerships, before it writes.
  let renewed = false;
  const racing: Pick<CheckpointStore, 'listOwnership' | 'claimOwnership'> = {
    claimOwnership: (ownerships: PartitionOwnership[]) => store.claimOwnership(ownerships),
    async listOwnership(...args) {
      const owned = await store.listOwnership(...args);
      const one = owned.find((o) => o.partitionId === '1');
      if (!renewed && one) {
        renewed = true;
        expect(await claim('1', one.etag)).toHaveLength(1);
      }
      return owned;
    },
  };
  await abandonOwnership(racing, scope, me, '1');
  expect(renewed).toBe(true);
  expect(await owner('1')).toBe('');
  // Only the partition whose receiver ended: partition 0 is still read here.
  expect(await owner('0')).toBe(me);
});
