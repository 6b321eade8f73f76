/** Where the vault keeps its secrets: a JSON file in the state directory, or nowhere (in-memory mode). */
import { join } from 'node:path';
import { readJsonIfExists, writeFileAtomic } from '../core/files.ts';

export interface SecretVersion {
  version: string;
  value: string;
  contentType?: string;
  tags?: Record<string, string>;
  enabled: boolean;
  /** Seconds since the epoch, stack time, as Key Vault's attributes carry them. */
  nbf?: number;
  exp?: number;
  created: number;
  updated: number;
}

export interface SecretRecord {
  /** The name as first created: Key Vault names are case-insensitive but keep their case. */
  name: string;
  /** Oldest first; the last one is the current version. */
  versions: SecretVersion[];
  deleted?: { deletedDate: number; scheduledPurgeDate: number };
}

/** Records keyed by lower-cased name. */
export type VaultData = Record<string, SecretRecord>;

export interface VaultStore {
  load(): VaultData;
  save(data: VaultData): void;
}

export function createStore(stateDir: string | undefined): VaultStore {
  if (!stateDir) return { load: () => ({}), save: () => {} };
  const path = join(stateDir, 'secrets.json');
  return {
    load: () => readJsonIfExists<VaultData>(path) ?? {},
    // Whole-file atomic writes: a crash leaves the previous state, never half a secret.
    save: (data) => writeFileAtomic(path, JSON.stringify(data)),
  };
}
