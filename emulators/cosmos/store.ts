import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
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
  /** The saved state, read once at start (not kept: the account holds it from then on). */
  load(): { snapshot: Snapshot | undefined; records: LogRecord[] };
  /**
   * Writes the records to the log before returning, so an acknowledged write survives a process kill
   * (not a power cut: no fsync). Synchronous: a page-cache write costs less than handing it to a thread.
   */
  append(records: LogRecord[]): void;
  /** Writes the whole state as the snapshot and empties the log. */
  compact(): void;
  close(): void;
}

export const memoryStore = (): Store => ({
  load: () => ({ snapshot: undefined, records: [] }),
  append: () => {},
  compact: () => {},
  close: () => {},
});

/** Past this log size the whole state is written as a snapshot and the log starts over. */
const COMPACT_AT = 32 * 1024 * 1024;

export interface FileStoreOptions {
  /** The state to snapshot. */
  dump: () => Snapshot;
  log: (line: string) => void;
  /**
   * A record the log did not take (a full disk): the account's memory now holds a change its files do
   * not, so it must start again from them (the component restarts). The store writes nothing more.
   */
  failed: (error: Error) => void;
  /** How bytes reach the log (node:fs writeSync); a test gives one that fails part-way. */
  write?: (fd: number, buffer: Buffer, offset: number, length: number) => number;
}

/**
 * Opens `dir`'s snapshot and log. A log line cut short by a kill is cut off the file, so new appends
 * never follow a torn line; one cut short by a failed write is cut off at once.
 */
export function fileStore(dir: string, options: FileStoreOptions): Store {
  const {
    dump,
    log,
    failed,
    write = (fd, buffer, offset, length) => writeSync(fd, buffer, offset, length),
  } = options;
  const snapshotPath = join(dir, 'snapshot.json');
  const logPath = join(dir, 'log.jsonl');
  mkdirSync(dir, { recursive: true });
  let fd: number | undefined;
  let size = 0;
  let broken: Error | undefined;

  const compact = () => {
    // The memory holds what the log refused: it must not reach the snapshot either.
    if (broken) return;
    try {
      writeFileAtomic(snapshotPath, JSON.stringify(dump()));
      // A kill right here replays the old log over the new snapshot: harmless, records are states.
      if (fd !== undefined) ftruncateSync(fd, 0);
      size = 0;
    } catch (error) {
      // The log still holds everything; keep appending to it.
      log(`cosmos: snapshot failed: ${(error as Error).message}`);
    }
  };

  return {
    load() {
      const snapshot = readJsonIfExists<Snapshot>(snapshotPath);
      const records: LogRecord[] = [];
      const bytes = existsSync(logPath) ? readFileSync(logPath) : Buffer.alloc(0);
      const lines = bytes.toString('utf8').split('\n');
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
      fd = openSync(logPath, 'a', 0o600);
      // Whatever follows the last newline is a torn write: cut it so the next record starts a line.
      size = bytes.lastIndexOf('\n') + 1;
      ftruncateSync(fd, size);
      return { snapshot, records };
    },
    append(records) {
      if (records.length === 0) return;
      if (fd === undefined) throw new Error('cosmos store: append before load');
      if (broken) throw new Error(`cosmos store: the log could not be written (${broken.message})`);
      let text = '';
      for (const record of records) text += `${JSON.stringify(record)}\n`;
      const buffer = Buffer.from(text);
      try {
        for (let offset = 0; offset < buffer.length; )
          offset += write(fd, buffer, offset, buffer.length - offset);
      } catch (error) {
        broken = error as Error;
        try {
          ftruncateSync(fd, size); // the part it took, torn: the next record must not follow it
        } catch {
          // The load cuts a torn last line too.
        }
        failed(broken);
        throw error;
      }
      size += buffer.length;
      if (size > COMPACT_AT) compact();
    },
    compact,
    close() {
      compact();
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
