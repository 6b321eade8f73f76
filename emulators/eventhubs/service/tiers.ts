import type { HubDefinition } from './namespace.ts';

/** What a namespace of each tier holds, as Azure's Event Hubs quotas and limits list them. */
export interface TierLimits {
  /** Largest event or batch a link accepts, in bytes. */
  maxMessageSize: number;
  maxRetentionInDays: number;
  maxPartitions: number;
  maxHubs: number;
}

const MB = 1024 * 1024;
const TIERS: Record<string, TierLimits> = {
  Basic: { maxMessageSize: MB / 4, maxRetentionInDays: 1, maxPartitions: 32, maxHubs: 10 },
  Standard: { maxMessageSize: MB, maxRetentionInDays: 7, maxPartitions: 32, maxHubs: 10 },
  Premium: { maxMessageSize: MB, maxRetentionInDays: 90, maxPartitions: 100, maxHubs: 100 },
  Dedicated: { maxMessageSize: MB, maxRetentionInDays: 90, maxPartitions: 1024, maxHubs: 1000 },
};

/**
 * The limits of `sku`, once the hubs fit them; otherwise throws naming every misfit, so that a topology
 * Azure would refuse to deploy does not run locally (where it would, say, keep events longer).
 */
export function tierLimits(sku: string, hubs: readonly HubDefinition[]): TierLimits {
  const limits = TIERS[sku];
  if (!limits) throw new Error(`unknown Event Hubs tier '${sku}'`);
  const problems: string[] = [];
  if (hubs.length > limits.maxHubs)
    problems.push(`${hubs.length} event hubs (at most ${limits.maxHubs} per namespace)`);
  const seen = new Set<string>();
  for (const { name, partitionCount, messageRetentionInDays: days } of hubs) {
    // Hub names are case-insensitive: two spellings are one hub.
    if (seen.has(name.toLowerCase())) problems.push(`hub '${name}' declared twice`);
    seen.add(name.toLowerCase());
    if (partitionCount > limits.maxPartitions)
      problems.push(`hub '${name}': ${partitionCount} partitions (at most ${limits.maxPartitions})`);
    if (!Number.isInteger(days) || days < 1 || days > limits.maxRetentionInDays)
      problems.push(
        `hub '${name}': retention of ${days} days (a whole number from 1 to ${limits.maxRetentionInDays})`,
      );
  }
  if (problems.length)
    throw new Error(`the Event Hubs ${sku} tier cannot hold this namespace: ${problems.join('; ')}`);
  return limits;
}
