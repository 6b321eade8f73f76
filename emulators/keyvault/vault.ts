/**
 * The vault's service logic: secrets with versions, soft delete (Key Vault's default since 2021:
 * a deleted secret stays recoverable for 90 days, then is purged), and the wire shapes of its answers.
 */
import { randomUUID } from 'node:crypto';
import type { StackClock } from '../core/clock.ts';
import { decodeBackup, encodeBackup } from './backup.ts';
import {
  deletedSecretNotFound,
  secretAlreadyExists,
  secretDeletedButRecoverable,
  secretDisabled,
  secretNotFound,
} from './errors.ts';
import type { SecretRecord, SecretVersion, VaultData, VaultStore } from './store.ts';

const RECOVERABLE_DAYS = 90;
const RECOVERY_LEVEL = 'Recoverable+Purgeable';

export interface SecretProperties {
  contentType?: string;
  tags?: Record<string, string>;
  enabled?: boolean;
  nbf?: number;
  exp?: number;
}
export interface SecretInput extends SecretProperties {
  value: string;
}

/** One page of a listing; `next` is the key to continue after. */
export interface Page<T> {
  value: T[];
  next?: string;
}

function page<T>(items: { key: string; item: T }[], size: number, after?: string): Page<T> {
  const start = after === undefined ? 0 : items.findIndex((entry) => entry.key > after);
  const slice = start < 0 ? [] : items.slice(start, start + size);
  const more = start >= 0 && start + size < items.length;
  return { value: slice.map((entry) => entry.item), next: more ? slice.at(-1)?.key : undefined };
}

export class Vault {
  #data: VaultData;

  constructor(
    private readonly store: VaultStore,
    private readonly clock: StackClock,
    /** `https://127.0.0.1:P/`: the prefix of every id. */
    private readonly baseUrl: string,
  ) {
    // Without a prototype: a secret may be named `constructor` or `toString`, which an object would
    // already answer for.
    this.#data = Object.assign(Object.create(null) as VaultData, store.load());
  }

  get(name: string, version?: string) {
    const record = this.#live(name);
    const found = version ? record?.versions.find((v) => v.version === version) : record?.versions.at(-1);
    if (!record || !found) throw secretNotFound(version ? `${name}/${version}` : name);
    if (!found.enabled) throw secretDisabled();
    return { value: found.value, ...this.#bundle(record, found) };
  }

  set(name: string, input: SecretInput) {
    const key = name.toLowerCase();
    const existing = this.#sweep()[key];
    if (existing?.deleted) throw secretDeletedButRecoverable(name);
    const now = this.#seconds();
    const version: SecretVersion = {
      version: randomUUID().replaceAll('-', ''),
      value: input.value,
      ...this.#properties(input),
      enabled: input.enabled ?? true,
      created: now,
      updated: now,
    };
    const record = existing ?? { name, versions: [] };
    record.versions.push(version);
    this.#data[key] = record;
    this.#save();
    return { value: version.value, ...this.#bundle(record, version) };
  }

  update(name: string, version: string | undefined, input: SecretProperties) {
    const record = this.#live(name);
    const found = version ? record?.versions.find((v) => v.version === version) : record?.versions.at(-1);
    if (!record || !found) throw secretNotFound(version ? `${name}/${version}` : name);
    Object.assign(
      found,
      this.#properties(input),
      input.enabled === undefined ? {} : { enabled: input.enabled },
    );
    found.updated = this.#seconds();
    this.#save();
    return this.#bundle(record, found);
  }

  delete(name: string) {
    const record = this.#live(name);
    if (!record) throw secretNotFound(name);
    const deletedDate = this.#seconds();
    record.deleted = { deletedDate, scheduledPurgeDate: deletedDate + RECOVERABLE_DAYS * 86_400 };
    this.#save();
    return this.#deletedBundle(record);
  }

  getDeleted(name: string) {
    return this.#deletedBundle(this.#deleted(name));
  }

  purge(name: string) {
    delete this.#data[this.#deleted(name).name.toLowerCase()];
    this.#save();
  }

  recover(name: string) {
    // Key Vault words this 404 as for a secret, not as for a deleted one (recorded answers of the SDK's tests).
    const record = this.#deleted(name, secretNotFound);
    delete record.deleted;
    this.#save();
    return this.#bundle(record, record.versions.at(-1) as SecretVersion);
  }

  backup(name: string): Buffer {
    const record = this.#live(name);
    if (!record) throw secretNotFound(name);
    return encodeBackup(record);
  }

  /** Brings a backed-up secret back with all its versions, as they were; the name must be free. */
  restore(blob: Buffer) {
    const record = decodeBackup(blob);
    const existing = this.#sweep()[record.name.toLowerCase()];
    if (existing?.deleted) throw secretDeletedButRecoverable(existing.name);
    if (existing) throw secretAlreadyExists(existing.name);
    this.#data[record.name.toLowerCase()] = record;
    this.#save();
    return this.#bundle(record, record.versions.at(-1) as SecretVersion);
  }

  list(size: number, after?: string): Page<ReturnType<Vault['item']>> {
    const live = Object.entries(this.#sweep()).filter(([, record]) => !record.deleted);
    const items = live
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([key, record]) => ({ key, item: this.item(record) }));
    return page(items, size, after);
  }

  listVersions(name: string, size: number, after?: string) {
    // Key Vault lists no versions, rather than answering 404, for a name that holds no secret.
    const record = this.#live(name);
    if (!record) return { value: [] };
    // Keys that sort in creation order, so a page boundary survives versions added meanwhile.
    const items = record.versions.map((v, index) => ({
      key: String(index).padStart(8, '0'),
      item: this.item(record, v),
    }));
    return page(items, size, after);
  }

  listDeleted(size: number, after?: string) {
    const deleted = Object.entries(this.#sweep()).filter(([, record]) => record.deleted);
    const items = deleted
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([key, record]) => ({ key, item: { ...this.item(record), ...this.#deletion(record) } }));
    return page(items, size, after);
  }

  /** Makes each seeded secret's current value the given one, adding a version only when it differs. */
  seed(entries: Record<string, string>): string[] {
    const changed: string[] = [];
    for (const [name, value] of Object.entries(entries)) {
      const record = this.#sweep()[name.toLowerCase()];
      if (record?.deleted) this.purge(name);
      if (record && !record.deleted && record.versions.at(-1)?.value === value) continue;
      this.set(name, { value });
      changed.push(name);
    }
    return changed;
  }

  /** A listing entry: the secret's id without version for the vault listing, with it for versions. */
  item(record: SecretRecord, version?: SecretVersion) {
    const shown = version ?? (record.versions.at(-1) as SecretVersion);
    const { id, ...rest } = this.#bundle(record, shown);
    return { id: version ? id : `${this.baseUrl}secrets/${record.name}`, ...rest };
  }

  #bundle(record: SecretRecord, v: SecretVersion) {
    return {
      id: `${this.baseUrl}secrets/${record.name}/${v.version}`,
      ...(v.contentType !== undefined && { contentType: v.contentType }),
      ...(v.tags !== undefined && { tags: v.tags }),
      attributes: {
        enabled: v.enabled,
        ...(v.nbf !== undefined && { nbf: v.nbf }),
        ...(v.exp !== undefined && { exp: v.exp }),
        created: v.created,
        updated: v.updated,
        recoveryLevel: RECOVERY_LEVEL,
        recoverableDays: RECOVERABLE_DAYS,
      },
    };
  }

  #deletion(record: SecretRecord) {
    return {
      recoveryId: `${this.baseUrl}deletedsecrets/${record.name}`,
      deletedDate: record.deleted?.deletedDate,
      scheduledPurgeDate: record.deleted?.scheduledPurgeDate,
    };
  }

  #deletedBundle(record: SecretRecord) {
    return { ...this.#deletion(record), ...this.#bundle(record, record.versions.at(-1) as SecretVersion) };
  }

  #properties(input: SecretProperties): Partial<SecretVersion> {
    const { contentType, tags, nbf, exp } = input;
    return Object.fromEntries(
      Object.entries({ contentType, tags, nbf, exp }).filter(([, v]) => v !== undefined),
    );
  }

  #live(name: string): SecretRecord | undefined {
    const record = this.#sweep()[name.toLowerCase()];
    return record?.deleted ? undefined : record;
  }

  #deleted(name: string, notFound = deletedSecretNotFound): SecretRecord {
    const record = this.#sweep()[name.toLowerCase()];
    if (!record?.deleted) throw notFound(name);
    return record;
  }

  /** Purges what soft delete kept past its retention, judged by the stack clock. */
  #sweep(): VaultData {
    const now = this.#seconds();
    const expired = Object.entries(this.#data).filter(
      ([, r]) => r.deleted && r.deleted.scheduledPurgeDate <= now,
    );
    for (const [key] of expired) delete this.#data[key];
    if (expired.length > 0) this.#save();
    return this.#data;
  }

  #seconds() {
    return Math.floor(this.clock.now() / 1000);
  }

  #save() {
    this.store.save(this.#data);
  }
}
