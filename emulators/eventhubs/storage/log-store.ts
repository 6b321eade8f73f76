import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonIfExists, writeFileAtomic } from '../../core/files.ts';

/** One event as the partition keeps it: the AMQP message bytes exactly as the producer sent them. */
export interface StoredEvent {
  sequenceNumber: number;
  /** Byte position of the event in the partition's stream (Event Hubs offsets are byte positions). */
  offset: number;
  /** Stack time (ms) at which the event was accepted. */
  enqueuedTime: number;
  partitionKey: string | undefined;
  message: Buffer;
}

/** What must survive even when retention has emptied the partition: numbering never restarts. */
export interface PartitionCounters {
  lastSequenceNumber: number;
  lastOffset: number;
  nextOffset: number;
  lastEnqueuedTime: number;
}

export interface PartitionLog {
  load(): { events: StoredEvent[]; counters: PartitionCounters | undefined };
  append(events: readonly StoredEvent[]): void;
  /** Rewrites the log with only `live` (after retention dropped the rest). */
  compact(live: readonly StoredEvent[], counters: PartitionCounters): void;
  close(): void;
}

/*
 * File layout, one record per event: u32 length of what follows, f64 sequence number, f64 offset,
 * f64 enqueued time, i32 partition-key length (-1: none), the key (UTF-8), the message bytes.
 * Appends are synchronous, so an event is on disk before the producer's delivery is accepted; a record
 * cut short by a crash is dropped (and the file truncated) on the next load.
 */
const FIXED = 28;

function encode(event: StoredEvent): Buffer {
  const key = event.partitionKey === undefined ? undefined : Buffer.from(event.partitionKey, 'utf8');
  const head = Buffer.alloc(4 + FIXED);
  head.writeUInt32BE(FIXED + (key?.length ?? 0) + event.message.length, 0);
  head.writeDoubleBE(event.sequenceNumber, 4);
  head.writeDoubleBE(event.offset, 12);
  head.writeDoubleBE(event.enqueuedTime, 20);
  head.writeInt32BE(key ? key.length : -1, 28);
  return Buffer.concat(key ? [head, key, event.message] : [head, event.message]);
}

/** Decodes every whole record; returns them and the length of the valid prefix. */
function decode(data: Buffer): { events: StoredEvent[]; validLength: number } {
  const events: StoredEvent[] = [];
  let at = 0;
  while (data.length - at >= 4 + FIXED) {
    const length = data.readUInt32BE(at);
    const keyLength = data.readInt32BE(at + 28);
    const end = at + 4 + length;
    if (length < FIXED || end > data.length || keyLength > length - FIXED) break;
    const keyEnd = at + 4 + FIXED + Math.max(keyLength, 0);
    events.push({
      sequenceNumber: data.readDoubleBE(at + 4),
      offset: data.readDoubleBE(at + 12),
      enqueuedTime: data.readDoubleBE(at + 20),
      partitionKey: keyLength < 0 ? undefined : data.toString('utf8', at + 4 + FIXED, keyEnd),
      message: Buffer.from(data.subarray(keyEnd, end)),
    });
    at = end;
  }
  return { events, validLength: at };
}

class FilePartitionLog implements PartitionLog {
  readonly #logPath: string;
  readonly #countersPath: string;
  #fd: number | undefined;

  constructor(dir: string, partitionId: string) {
    mkdirSync(dir, { recursive: true });
    this.#logPath = join(dir, `${partitionId}.log`);
    this.#countersPath = join(dir, `${partitionId}.json`);
  }

  load() {
    this.#fd = openSync(this.#logPath, 'a+');
    const { events, validLength } = decode(readFileSync(this.#logPath));
    if (validLength < fstatSync(this.#fd).size) ftruncateSync(this.#fd, validLength);
    return { events, counters: readJsonIfExists<PartitionCounters>(this.#countersPath) };
  }

  append(events: readonly StoredEvent[]) {
    const fd = this.#fd;
    if (fd === undefined) throw new Error('partition log is closed');
    const data = Buffer.concat(events.map(encode));
    const size = fstatSync(fd).size;
    try {
      for (let written = 0; written < data.length; ) written += writeSync(fd, data, written);
    } catch (error) {
      // All or nothing: a failed append (disk full…) must not leave half a batch before the next one.
      ftruncateSync(fd, size);
      throw error;
    }
  }

  compact(live: readonly StoredEvent[], counters: PartitionCounters) {
    // Counters first: if the rewrite is interrupted, the next load still numbers events correctly.
    writeFileAtomic(this.#countersPath, JSON.stringify(counters));
    this.close();
    writeFileAtomic(this.#logPath, Buffer.concat(live.map(encode)));
    this.#fd = openSync(this.#logPath, 'a+');
  }

  close() {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}

const memoryLog: PartitionLog = {
  load: () => ({ events: [], counters: undefined }),
  append: () => {},
  compact: () => {},
  close: () => {},
};

/** A partition's log in `stateDir/<hub>/`, or nothing persisted when stateDir is undefined. */
export function openPartitionLog(
  stateDir: string | undefined,
  hub: string,
  partitionId: string,
): PartitionLog {
  return stateDir === undefined ? memoryLog : new FilePartitionLog(join(stateDir, hub), partitionId);
}

/** When the hub was created: fixed at the first start with this state directory. */
export function hubCreatedAt(stateDir: string | undefined, hub: string, now: number): number {
  if (stateDir === undefined) return now;
  const path = join(stateDir, hub, 'hub.json');
  const stored = readJsonIfExists<{ createdAt: number }>(path);
  if (stored) return stored.createdAt;
  writeFileAtomic(path, JSON.stringify({ createdAt: now }));
  return now;
}
