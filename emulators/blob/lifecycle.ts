import type { BlobServiceClient } from '@azure/storage-blob';
import type { StackClock } from '../core/clock.ts';
import type { LifecycleRule } from '../core/topology.ts';

const DAY_MS = 86_400_000;
const BLOB_TYPES = { blockBlob: 'BlockBlob', appendBlob: 'AppendBlob' } as const;

export interface LifecycleReport {
  ranAt: string;
  deleted: string[];
}

/** `prefixMatch` entries are `container/blob-prefix`, as in Azure's management policy. */
function splitPrefix(prefix: string): { container: string; blobPrefix: string } {
  const slash = prefix.indexOf('/');
  return slash < 0
    ? { container: prefix, blobPrefix: '' }
    : { container: prefix.slice(0, slash), blobPrefix: prefix.slice(slash + 1) };
}

/**
 * Applies the storage account's lifecycle management policy once, as Azure's daily run does:
 * for each enabled rule with a `delete` action, deletes base blobs of the filtered types whose
 * last modification (in stack time) is more than `daysAfterModificationGreaterThan` days ago.
 * Rules without `prefixMatch` apply to every container, as in Azure.
 */
export async function runLifecycle(
  service: BlobServiceClient,
  rules: LifecycleRule[],
  clock: StackClock,
): Promise<LifecycleReport> {
  const now = clock.now();
  const deleted: string[] = [];
  for (const rule of rules) {
    const days = rule.definition.actions.baseBlob.delete?.daysAfterModificationGreaterThan;
    if (!rule.enabled || days === undefined) continue;
    const types = new Set<string>(rule.definition.filters.blobTypes.map((type) => BLOB_TYPES[type]));
    const prefixes = rule.definition.filters.prefixMatch ?? (await allContainers(service));
    for (const { container, blobPrefix } of prefixes.map(splitPrefix)) {
      const client = service.getContainerClient(container);
      if (!(await client.exists())) continue;
      for await (const blob of client.listBlobsFlat({ prefix: blobPrefix })) {
        const modified = clock.toStackTime(blob.properties.lastModified.getTime());
        if (!types.has(blob.properties.blobType ?? '') || now - modified <= days * DAY_MS) continue;
        // Gone meanwhile (a client deleted it) is as good as deleted here: only ours are reported.
        const { succeeded } = await client.deleteBlob(blob.name, { deleteSnapshots: 'include' }).then(
          () => ({ succeeded: true }),
          (error: { statusCode?: number }) => {
            if (error.statusCode === 404) return { succeeded: false };
            throw error;
          },
        );
        if (succeeded) deleted.push(`${container}/${blob.name}`);
      }
    }
  }
  return { ranAt: new Date(now).toISOString(), deleted };
}

async function allContainers(service: BlobServiceClient): Promise<string[]> {
  const names: string[] = [];
  for await (const container of service.listContainers()) names.push(container.name);
  return names;
}

export const LIFECYCLE_PERIOD_MS = DAY_MS;
