import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readFileSync, write } from 'node:fs';
import { join } from 'node:path';
import { readJsonIfExists, writeFileAtomic } from '../core/files.ts';
import type { ContainerResource, DatabaseResource, Item } from './model.ts';

/** One change, carrying the full new state so that replaying a record twice changes nothing. */
export type LogRecord =
  | { t: 'db'; db: DatabaseResource }
  | { t: 'dropDb'; db: string }
  | { t: 'coll'; db: string; coll: ContainerResource }
  | { t: 'dropColl'; db: string; coll: string }
  | { t: 'put'; db: string; coll: string; key: string; item: Item; lsn: number }
  | { t: 'del'; db: string; coll: string; key: string; lsn: number };

export interface Snapshot {
  databases: {
    db: DatabaseResource;
    containers: { coll: ContainerResource; lsn: number; items: [string, { item: Item; lsn: number }][] }[];
  }[];
}

/** Where the account keeps its state: an append-only log plus a snapshot, or nothing (memory mode). */
export interface Store {
  readonly snapshot: Snapshot | undefined;
  readonly records: LogRecord[];
  /** Resolves once the records reached the file (group commit: concurrent writers share one write). */
  append(records: LogRecord[]): Promise<void>;
  /** Writes the whole state as the snapshot and empties the log. */
  compact(): Promise<void>;
  close(): Promise<void>;
}

export const memoryStore = (): Store => ({
  snapshot: undefined,
  records: [],
  append: async () => {},
  compact: async () => {},
  close: async () => {},
});

/** Past this log size the whole state is written as a snapshot and the log starts over. */
const COMPACT_AT = 32 * 1024 * 1024;

/**
 * Opens `dir`'s snapshot and log. A log line cut short by a kill is dropped; the log is folded into
 * the snapshot (`compact`, right after loading) so new appends never follow a torn line. `dump` gives the state to snapshot.
 */
export function fileStore(dir: string, dump: () => Snapshot, log: (line: string) => void): Store {
  const snapshotPath = join(dir, 'snapshot.json');
  const logPath = join(dir, 'log.jsonl');
  const snapshot = readJsonIfExists<Snapshot>(snapshotPath);
  const records: LogRecord[] = [];
  if (existsSync(logPath)) {
    const lines = readFileSync(logPath, 'utf8').split('\n');
    for (const [index, line] of lines.entries()) {
      if (!line) continue;
      try {
        records.push(JSON.parse(line) as LogRecord);
      } catch {
        log(
          `cosmos: dropped unreadable log line ${index + 1}${index === lines.length - 1 ? ' (torn write)' : ''}`,
        );
      }
    }
  }
  mkdirSync(dir, { recursive: true });
  const fd = openSync(logPath, 'a', 0o600);
  let size = 0;
  let pending: { text: string; done: () => void; fail: (error: Error) => void }[] = [];
  let compactWaiters: (() => void)[] = [];
  let running = false;

  const writeAll = async (buffer: Buffer) => {
    for (let offset = 0; offset < buffer.length; ) {
      offset += await new Promise<number>((resolve, reject) =>
        write(fd, buffer, offset, buffer.length - offset, null, (error, n) =>
          error ? reject(error) : resolve(n),
        ),
      );
    }
  };

  // One loop does every write and compaction, so a snapshot never races an append.
  const loop = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    while (pending.length > 0 || compactWaiters.length > 0 || size > COMPACT_AT) {
      const batch = pending;
      pending = [];
      if (batch.length > 0) {
        try {
          const buffer = Buffer.from(batch.map((entry) => entry.text).join(''));
          await writeAll(buffer);
          size += buffer.length;
          for (const entry of batch) entry.done();
        } catch (error) {
          for (const entry of batch) entry.fail(error as Error);
        }
      }
      if (compactWaiters.length > 0 || size > COMPACT_AT) {
        const waiters = compactWaiters;
        compactWaiters = [];
        try {
          writeFileAtomic(snapshotPath, JSON.stringify(dump()));
          // A kill right here replays the old log over the new snapshot: harmless, records are states.
          ftruncateSync(fd, 0);
          size = 0;
        } catch (error) {
          // The log still holds everything; keep appending to it.
          log(`cosmos: snapshot failed: ${(error as Error).message}`);
        }
        for (const done of waiters) done();
      }
    }
    running = false;
  };
  const kick = () => {
    if (running) return;
    running = true;
    void loop();
  };

  return {
    snapshot,
    records,
    append(newRecords) {
      if (newRecords.length === 0) return Promise.resolve();
      const text = newRecords.map((record) => `${JSON.stringify(record)}\n`).join('');
      return new Promise((done, fail) => {
        pending.push({ text, done, fail });
        kick();
      });
    },
    compact() {
      return new Promise((done) => {
        compactWaiters.push(done);
        kick();
      });
    },
    async close() {
      await this.compact();
      closeSync(fd);
    },
  };
}
