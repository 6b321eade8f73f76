import { EventEmitter } from 'node:events';
import type { StackClock } from '../../core/clock.ts';
import type { PartitionCounters, PartitionLog, StoredEvent } from '../storage/log-store.ts';

export interface PartitionProperties {
  beginningSequenceNumber: number;
  lastEnqueuedSequenceNumber: number;
  lastEnqueuedOffset: string;
  lastEnqueuedTime: number;
  isEmpty: boolean;
}

/**
 * One partition: an append-only sequence of events numbered from 0, trimmed from the front once events
 * are older than the hub's retention (by the stack clock). Emits `append` after new events are stored.
 */
export class Partition extends EventEmitter<{ append: [] }> {
  /** Retained events, oldest first; sequence numbers are contiguous. */
  #events: StoredEvent[] = [];
  #counters: PartitionCounters = {
    lastSequenceNumber: -1,
    lastOffset: -1,
    nextOffset: 0,
    lastEnqueuedTime: 0,
  };
  /** Records still in the log file although retention dropped them; compacted away in bulk. */
  #deadInLog = 0;
  #cancelExpiry: (() => void) | undefined;

  constructor(
    readonly id: string,
    readonly retentionMs: number,
    readonly clock: StackClock,
    readonly log: PartitionLog,
  ) {
    super();
    const { events, counters } = log.load();
    this.#events = events;
    const last = events.at(-1);
    if (counters) this.#counters = counters;
    if (last && last.sequenceNumber > this.#counters.lastSequenceNumber) this.#counters = countersAfter(last);
    this.#dropExpired();
  }

  /** Stores events (all or none) and returns them numbered. */
  append(messages: readonly { message: Buffer; partitionKey: string | undefined }[]): StoredEvent[] {
    const enqueuedTime = this.clock.now();
    let { lastSequenceNumber, nextOffset } = this.#counters;
    const events = messages.map(({ message, partitionKey }) => {
      const event = {
        sequenceNumber: ++lastSequenceNumber,
        offset: nextOffset,
        enqueuedTime,
        partitionKey,
        message,
      };
      nextOffset += message.length;
      return event;
    });
    const last = events.at(-1);
    if (!last) return events;
    this.log.append(events);
    this.#events.push(...events);
    this.#counters = countersAfter(last);
    if (this.#events.length === events.length) this.#armExpiry();
    this.emit('append');
    return events;
  }

  get beginSequenceNumber(): number {
    return this.#events[0]?.sequenceNumber ?? this.#counters.lastSequenceNumber + 1;
  }

  /** The sequence number the next event will get. */
  get endSequenceNumber(): number {
    return this.#counters.lastSequenceNumber + 1;
  }

  /** The retained event with this sequence number, if any. */
  event(sequenceNumber: number): StoredEvent | undefined {
    return this.#events[sequenceNumber - this.beginSequenceNumber];
  }

  /** Retained events, oldest first (read-only view for position searches). */
  get events(): readonly StoredEvent[] {
    return this.#events;
  }

  get lastOffset(): number {
    return this.#counters.lastOffset;
  }

  properties(): PartitionProperties {
    return {
      beginningSequenceNumber: this.beginSequenceNumber,
      lastEnqueuedSequenceNumber: this.#counters.lastSequenceNumber,
      lastEnqueuedOffset: String(this.#counters.lastOffset),
      lastEnqueuedTime: this.#counters.lastEnqueuedTime,
      isEmpty: this.#events.length === 0,
    };
  }

  close(): void {
    this.#cancelExpiry?.();
    this.log.close();
  }

  #armExpiry(): void {
    this.#cancelExpiry?.();
    this.#cancelExpiry = undefined;
    const oldest = this.#events[0];
    if (!oldest) return;
    // `at` runs the callback at once when the time has already come; the re-arm it does then must win.
    let fired = false;
    const cancel = this.clock.at(oldest.enqueuedTime + this.retentionMs, () => {
      fired = true;
      this.#dropExpired();
    });
    if (!fired) this.#cancelExpiry = cancel;
  }

  #dropExpired(): void {
    const cutoff = this.clock.now() - this.retentionMs;
    const keep = this.#events.findIndex((event) => event.enqueuedTime > cutoff);
    const dropped = keep === -1 ? this.#events.length : keep;
    if (dropped > 0) {
      this.#events = this.#events.slice(dropped);
      this.#deadInLog += dropped;
      // Rewrite the file only once it holds as many dead records as live ones: amortised O(1) per event.
      if (this.#deadInLog >= this.#events.length) {
        this.log.compact(this.#events, this.#counters);
        this.#deadInLog = 0;
      }
    }
    this.#armExpiry();
  }
}

function countersAfter(event: StoredEvent): PartitionCounters {
  return {
    lastSequenceNumber: event.sequenceNumber,
    lastOffset: event.offset,
    nextOffset: event.offset + event.message.length,
    lastEnqueuedTime: event.enqueuedTime,
  };
}
