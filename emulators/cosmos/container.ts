import type { StackClock } from '../core/clock.ts';
import { errors } from './errors.ts';
import { type ContainerResource, type Item, itemRid, newEtag, partitionKeyOf } from './model.ts';
import type { LogRecord } from './store.ts';

/** Cosmos's largest document: 2 MB of JSON. */
export const MAX_ITEM_BYTES = 2 * 1024 * 1024;

interface Entry {
  item: Item;
  /** Log sequence number of the entry's last write: the change feed's order and continuation. */
  lsn: number;
  pk: string;
}

export interface WriteResult {
  status: number;
  item: Item;
}

/** One container's documents, keyed by partition key and id, and its write sequence. */
export class Container {
  readonly entries = new Map<string, Entry>();
  lsn = 0;
  /** Set while a transactional batch runs: the state of each touched key before the batch. */
  #journal: Map<string, Entry | undefined> | undefined;
  #pendingRecords: LogRecord[] = [];

  constructor(
    readonly db: string,
    public resource: ContainerResource,
    private readonly clock: StackClock,
  ) {}

  static key = (pk: string, id: string) => `${pk}\u0000${id}`;

  read(pk: string, id: string): Item | undefined {
    return this.entries.get(Container.key(pk, id))?.item;
  }

  /** Create, replace or upsert `body` (already parsed JSON) in partition `pkHeader` (if the client named one). */
  write(
    mode: 'create' | 'replace' | 'upsert',
    body: unknown,
    pkHeader: string | undefined,
    opts: WriteOptions = {},
  ) {
    const doc = checkDocument(body);
    const pk = partitionKeyOf(this.resource.partitionKey, doc);
    if (pkHeader !== undefined && pkHeader !== pk) throw errors.wrongPartitionKey();
    if (opts.urlId !== undefined && opts.urlId !== doc.id) {
      throw errors.badRequest('The value of the id in the URL and the id in the body must be the same.');
    }
    const key = Container.key(pk, doc.id);
    const existing = this.entries.get(key);
    if (mode === 'create' && existing) throw errors.conflict();
    if (mode === 'replace' && !existing) throw errors.itemNotFound();
    if (existing && opts.ifMatch !== undefined && opts.ifMatch !== existing.item._etag)
      throw errors.preconditionFailed();
    const lsn = this.#nextLsn();
    const rid = existing?.item._rid ?? itemRid(this.resource._rid, lsn);
    const item: Item = {
      ...doc,
      _rid: rid,
      _self: `${this.resource._self}docs/${rid}/`,
      _etag: newEtag(),
      _attachments: 'attachments/',
      _ts: Math.floor(this.clock.now() / 1000),
    };
    this.#set(key, { item, lsn, pk });
    return { status: existing ? 200 : 201, item };
  }

  delete(pk: string, id: string, ifMatch?: string): void {
    const key = Container.key(pk, id);
    const existing = this.entries.get(key);
    if (!existing) throw errors.itemNotFound();
    if (ifMatch !== undefined && ifMatch !== existing.item._etag) throw errors.preconditionFailed();
    const lsn = this.#nextLsn();
    this.#touch(key);
    this.entries.delete(key);
    this.#pendingRecords.push({ t: 'del', db: this.db, coll: this.resource.id, key, lsn });
  }

  /** Runs `fn` so that either all its writes happen or, if it throws, none does. */
  transaction<T>(fn: () => T): T {
    const lsn = this.lsn;
    const records = this.#pendingRecords.length;
    this.#journal = new Map();
    try {
      return fn();
    } catch (error) {
      for (const [key, entry] of this.#journal) {
        if (entry) this.entries.set(key, entry);
        else this.entries.delete(key);
      }
      this.lsn = lsn;
      this.#pendingRecords.length = records;
      throw error;
    } finally {
      this.#journal = undefined;
    }
  }

  /** Log records of the writes since the last call. */
  takeRecords(): LogRecord[] {
    const records = this.#pendingRecords;
    this.#pendingRecords = [];
    return records;
  }

  /** Documents (optionally of one partition), in storage order. */
  items(pk?: string): Item[] {
    const items: Item[] = [];
    for (const entry of this.entries.values())
      if (pk === undefined || entry.pk === pk) items.push(entry.item);
    return items;
  }

  /** Latest versions written after `sinceLsn` (and at or after `sinceTs` seconds), in write order. */
  changes(sinceLsn: number, pk: string | undefined, sinceTs: number | undefined, max: number) {
    const found: Entry[] = [];
    for (const entry of this.entries.values()) {
      if (entry.lsn <= sinceLsn || (pk !== undefined && entry.pk !== pk)) continue;
      if (sinceTs !== undefined && entry.item._ts < sinceTs) continue;
      found.push(entry);
    }
    found.sort((a, b) => a.lsn - b.lsn);
    return found.slice(0, max).map((entry) => ({ ...entry.item, _lsn: entry.lsn }));
  }

  /** Replays a logged write (on load). */
  apply(key: string, entry: { item: Item; lsn: number } | undefined, lsn: number): void {
    if (entry) this.entries.set(key, { ...entry, pk: key.slice(0, key.indexOf('\u0000')) });
    else this.entries.delete(key);
    this.lsn = Math.max(this.lsn, lsn);
  }

  #nextLsn(): number {
    this.lsn += 1;
    return this.lsn;
  }

  #touch(key: string): void {
    if (this.#journal && !this.#journal.has(key)) this.#journal.set(key, this.entries.get(key));
  }

  #set(key: string, entry: Entry): void {
    this.#touch(key);
    this.entries.set(key, entry);
    this.#pendingRecords.push({
      t: 'put',
      db: this.db,
      coll: this.resource.id,
      key,
      item: entry.item,
      lsn: entry.lsn,
    });
  }
}

export interface WriteOptions {
  ifMatch?: string;
  /** The id in the request path (replace), which must be the body's. */
  urlId?: string;
}

function checkDocument(body: unknown): Record<string, unknown> & { id: string } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw errors.invalidPayload();
  const doc = body as Record<string, unknown>;
  if (doc.id === undefined || doc.id === '') {
    throw errors.badRequest(
      "The input content is invalid because the required properties - 'id; ' - are missing",
    );
  }
  // Azure stores ids with '/', '\', '?' or '#' (the SDK refuses all but '?' itself); only the length is
  // checked, in bytes of UTF-8 though the text says characters.
  if (typeof doc.id !== 'string' || Buffer.byteLength(doc.id) > 1023) {
    throw errors.badRequest(
      `The input name '${String(doc.id)}' is invalid. Ensure to provide a unique non-empty string less than '1024' characters.`,
    );
  }
  if ('ttl' in doc && !validTtl(doc.ttl)) {
    const shown = typeof doc.ttl === 'object' && doc.ttl !== null ? JSON.stringify(doc.ttl) : String(doc.ttl);
    throw errors.badRequest(
      `Message: {"Errors":["The input ttl '${shown}' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."]}`,
    );
  }
  if (Buffer.byteLength(JSON.stringify(doc)) > MAX_ITEM_BYTES) throw errors.tooLarge();
  return doc as Record<string, unknown> & { id: string };
}

/** An item's time to live: -1 (never expire) or whole seconds up to Cosmos's int32 limit. */
const validTtl = (ttl: unknown) =>
  ttl === -1 || (Number.isInteger(ttl) && (ttl as number) > 0 && (ttl as number) <= 2147483647);
