/**
 * The Cosmos DB trigger's leases, in the shapes the .NET change feed processor (Microsoft.Azure.Cosmos,
 * which the extension runs) reads and writes, so a real Functions host can take the lease container over
 * and resume where this one stopped (and the other way round):
 * - ids `<leaseContainerPrefix><account host>_<database rid>_<container rid>..<range>`, the host without
 *   its port, as .NET's `Uri.Host` gives it (`GetLeasePrefix`);
 * - documents as `DocumentServiceLeaseCore` serializes them: `version` 0 (a partition key range lease),
 *   `LeaseToken`, `FeedRange` `{"Range": {"min", "max"}}`, `Owner`, `ContinuationToken`, `properties`,
 *   `timestamp`, `Mode` `Incremental Feed` (the A-IM value, which the processor compares with its
 *   own mode: any other stops it);
 * - the continuation is what .NET keeps, the change feed's ETag (`"42"`), not the JS SDK's own token;
 * - `<prefix>.info` marks the store initialized (`DocumentServiceLeaseStoreCosmos`), so a .NET host does
 *   not take the lock and create the leases again.
 */
import type { Container, FeedRange } from '@azure/cosmos';
import type { Host } from '../host.ts';

export interface Lease {
  id: string;
  version: 0;
  LeaseToken: string;
  FeedRange: { Range: { min: string; max: string } };
  Owner: string | null;
  ContinuationToken: string | null;
  properties: Record<string, string>;
  timestamp: string;
  Mode: 'Incremental Feed';
}

/** The lease id prefix: `<leaseContainerPrefix><host>_<database rid>_<container rid>`. */
export const leasePrefix = (
  leaseContainerPrefix: string,
  endpoint: string,
  databaseRid: string,
  rid: string,
) => `${leaseContainerPrefix}${new URL(endpoint).hostname}_${databaseRid}_${rid}`;

/**
 * The ETag .NET keeps, from a JS continuation token (what this host stored before, and what the JS SDK
 * hands back after each page), or from an ETag as .NET stored it.
 */
export function etagOf(token: string | null | undefined): string | null {
  if (!token?.startsWith('{')) return token ?? null;
  const parsed = JSON.parse(token) as { Continuation?: { continuationToken?: string }[] };
  return parsed.Continuation?.[0]?.continuationToken ?? null;
}

/** The JS SDK's token for one range from a lease's ETag (the SDK checks `rid` against the container's). */
export const continuationOf = (rid: string, range: FeedRange, etag: string) =>
  JSON.stringify({
    rid,
    Continuation: [
      { minInclusive: range.minInclusive, maxExclusive: range.maxExclusive, continuationToken: etag },
    ],
  });

/**
 * Takes the range's lease, creating it as the processor does if there is none. `legacyId` is the id this
 * host gave it before (with the endpoint's port): its position is kept, so no change runs twice.
 */
export async function acquire(
  leases: Container,
  ids: { id: string; legacyId: string },
  range: FeedRange,
  owner: string,
  clock: Host['clock'],
): Promise<Lease> {
  const read = async (id: string) => (await leases.item(id, id).read<Partial<Lease>>()).resource;
  const stored = (await read(ids.id)) ?? (await read(ids.legacyId));
  const lease: Lease = {
    id: ids.id,
    version: 0,
    LeaseToken: ids.id.slice(ids.id.lastIndexOf('..') + 2),
    FeedRange: { Range: { min: range.minInclusive, max: range.maxExclusive } },
    Owner: owner,
    ContinuationToken: etagOf(stored?.ContinuationToken),
    properties: stored?.properties ?? {},
    timestamp: clock.date().toISOString(),
    Mode: 'Incremental Feed',
  };
  await save(leases, lease, clock);
  return lease;
}

/** Writes the lease with this host's time, as the processor stamps each update. */
export async function save(leases: Container, lease: Lease, clock: Host['clock']): Promise<Lease> {
  lease.timestamp = clock.date().toISOString();
  await leases.items.upsert(lease);
  return lease;
}

/** Marks the lease store initialized once every range has its lease, as the processor does. */
export async function markInitialized(leases: Container, prefix: string): Promise<void> {
  const id = `${prefix}.info`;
  await leases.items.upsert({ id });
}

/** The leases this host's listeners hold, by lease container and lease id: the function holding each. */
const held = new Map<string, string>();

/**
 * Takes a lease for a function unless another of this host's functions holds it, and then answers that
 * one. In Azure two functions that share a lease container and prefix compete for the same leases, so
 * only one of them is triggered for a range (each listener is a processor instance of its own).
 */
export function claim(key: string, functionName: string): string | undefined {
  const holder = held.get(key);
  if (holder !== undefined && holder !== functionName) return holder;
  held.set(key, functionName);
  return undefined;
}

export const release = (key: string) => held.delete(key);
