import type { StackClock } from '../../core/clock.ts';
import { hubCreatedAt, openPartitionLog } from '../storage/log-store.ts';
import { type Fault, linkStolen, partitionOutOfRange, tooManyReceivers } from './faults.ts';
import { Partition } from './partition.ts';
import { partitionForKey } from './partition-key.ts';

/**
 * Every hub has the `$default` consumer group and, since the topology declares no other and the Basic
 * tier cannot create any, nothing else: receivers for any other group get "entity not found".
 */
export const DEFAULT_CONSUMER_GROUP = '$default';
/** Event Hubs allows 5 concurrent receivers per partition and consumer group (non-epoch readers). */
const MAX_RECEIVERS = 5;
const DAY = 86_400_000;

/** A reader of one partition in one consumer group, as the protocol layer registers it. */
export interface PartitionReader {
  name: string;
  ownerLevel: number | undefined;
  /** Ends the reader with this error (its partition was taken by a higher owner level). */
  disconnect(fault: Fault): void;
}

export interface HubDefinition {
  name: string;
  partitionCount: number;
  messageRetentionInDays: number;
}

export class EventHub {
  readonly partitions: readonly Partition[];
  #roundRobin = 0;
  #readers = new Map<string, Set<PartitionReader>>();

  constructor(
    readonly name: string,
    readonly createdAt: number,
    partitions: Partition[],
  ) {
    this.partitions = partitions;
  }

  /** The partition with this id; ids are "0" … "n-1". */
  partition(id: string): Partition {
    const partition = /^(0|[1-9]\d*)$/.test(id) ? this.partitions[Number(id)] : undefined;
    if (!partition) throw partitionOutOfRange(this.partitions.length);
    return partition;
  }

  /** Where an event sent to the hub itself goes: by partition key hash, else round robin. */
  assign(partitionKey: string | undefined): Partition {
    const index =
      partitionKey === undefined
        ? this.#roundRobin++ % this.partitions.length
        : partitionForKey(partitionKey, this.partitions.length);
    return this.partitions[index] as Partition;
  }

  hasConsumerGroup(name: string): boolean {
    return name.toLowerCase() === DEFAULT_CONSUMER_GROUP;
  }

  /**
   * Registers a reader under the owner-level (epoch) rules: a higher or equal owner level disconnects
   * the current readers, a lower one or none is refused while an owner-level reader holds the
   * partition. Returns the function that unregisters it.
   */
  addReader(consumerGroup: string, partitionId: string, reader: PartitionReader): () => void {
    const key = `${consumerGroup.toLowerCase()}/${partitionId}`;
    const readers = this.#readers.get(key) ?? new Set<PartitionReader>();
    this.#readers.set(key, readers);
    const owner = [...readers].reduce<PartitionReader | undefined>(
      (best, r) => (r.ownerLevel !== undefined && r.ownerLevel > (best?.ownerLevel ?? -1) ? r : best),
      undefined,
    );
    const level = reader.ownerLevel;
    if (level === undefined) {
      if (owner) {
        throw linkStolen(
          `At least one receiver for the endpoint is created with epoch of '${owner.ownerLevel}', and so non-epoch receiver is not allowed. Either reconnect with a higher epoch, or make sure all epoch receivers are closed or disconnected.`,
        );
      }
      if (readers.size >= MAX_RECEIVERS)
        throw tooManyReceivers(
          MAX_RECEIVERS,
          [...readers].map((r) => r.name),
        );
    } else if (owner && level < (owner.ownerLevel as number)) {
      throw linkStolen(
        `Receiver '${owner.name}' with a higher epoch '${owner.ownerLevel}' already exists. Receiver '${reader.name}' with epoch ${level} cannot be created. Make sure you are creating receiver with increasing epoch value to ensure connectivity, or ensure all old epoch receivers are closed or disconnected.`,
      );
    } else {
      for (const other of readers) {
        other.disconnect(
          linkStolen(
            `New receiver '${reader.name}' with higher epoch of '${level}' is created hence current receiver '${other.name}' with epoch '${other.ownerLevel ?? ''}' is getting disconnected. If you are recreating the receiver, make sure a higher epoch is used.`,
          ),
        );
      }
      readers.clear();
    }
    readers.add(reader);
    return () => readers.delete(reader);
  }
}

/** The namespace: its hubs (names are case-insensitive, as in Azure), built from the topology. */
export class EventHubsNamespace {
  readonly #hubs = new Map<string, EventHub>();

  constructor(hubs: readonly HubDefinition[], stateDir: string | undefined, clock: StackClock) {
    for (const { name, partitionCount, messageRetentionInDays } of hubs) {
      const partitions = Array.from(
        { length: partitionCount },
        (_, i) =>
          new Partition(
            String(i),
            messageRetentionInDays * DAY,
            clock,
            openPartitionLog(stateDir, name, String(i)),
          ),
      );
      this.#hubs.set(
        name.toLowerCase(),
        new EventHub(name, hubCreatedAt(stateDir, name, clock.now()), partitions),
      );
    }
  }

  hub(name: string): EventHub | undefined {
    return this.#hubs.get(name.toLowerCase());
  }

  close(): void {
    for (const hub of this.#hubs.values()) for (const partition of hub.partitions) partition.close();
  }
}
