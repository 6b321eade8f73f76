/**
 * Giving up the partitions this host holds but does not read: at start, those a previous run still held
 * (it died before it could), and later one whose receiver ended. The JS processor takes a partition it
 * owns for one it is reading and leaves it idle until the ownership expires (30 s); the .NET processor
 * restarts such a partition at its next load-balancing cycle, which giving it up here amounts to.
 */
import type { CheckpointStore } from '@azure/event-hubs';

/** Where the ownerships live: the hub and consumer group, as the processor's client names them. */
export interface OwnershipScope {
  fullyQualifiedNamespace: string;
  eventHubName: string;
  consumerGroup: string;
}

/**
 * Marks as abandoned (no owner) every ownership `ownerId` holds, or only `partitionId`'s. A write the
 * store refuses (its ETag changed since the list) is read again and retried while the ownership is still
 * ours: the processor's own load balancing may have renewed it meanwhile, from a list read before the
 * partition's receiver ended, and that ownership would then idle here until it expired.
 */
export async function abandonOwnership(
  store: Pick<CheckpointStore, 'listOwnership' | 'claimOwnership'>,
  { fullyQualifiedNamespace, eventHubName, consumerGroup }: OwnershipScope,
  ownerId: string,
  partitionId?: string,
): Promise<void> {
  for (;;) {
    const owned = await store.listOwnership(fullyQualifiedNamespace, eventHubName, consumerGroup);
    const ours = owned.filter(
      (ownership) =>
        ownership.ownerId === ownerId && (partitionId === undefined || ownership.partitionId === partitionId),
    );
    if (!ours.length) return;
    const given = await store.claimOwnership(ours.map((ownership) => ({ ...ownership, ownerId: '' })));
    if (given.length === ours.length) return;
  }
}
