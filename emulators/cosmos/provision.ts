/**
 * Creates the databases and containers `topology.cosmos` declares, as the Azure template does: only
 * what is missing, so a persisted account keeps its data and settings. Runs at start, before the
 * listener opens, so no client ever sees the account without them.
 */
import type { Topology } from '../core/topology.ts';
import type { Account } from './account.ts';
import type { LogRecord } from './store.ts';

/** The records of what had to be created (for the store), and their names (for the log). */
export function provision(
  account: Account,
  declared: Topology['cosmos']['databases'],
): { records: LogRecord[]; created: string[] } {
  const records: LogRecord[] = [];
  const created: string[] = [];
  for (const { id, containers } of declared) {
    if (!account.databases.has(id)) {
      records.push(...account.createDatabase({ id }).records);
      created.push(id);
    }
    const existing = account.databases.get(id)?.containers;
    for (const container of containers) {
      if (existing?.has(container.id)) continue;
      const definition = {
        id: container.id,
        partitionKey: { paths: [container.partitionKeyPath], kind: 'Hash' },
      };
      records.push(...account.createContainer(id, definition).records);
      created.push(`${id}/${container.id}`);
    }
  }
  return { records, created };
}
