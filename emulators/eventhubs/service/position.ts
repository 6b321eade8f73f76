import type { StoredEvent } from '../storage/log-store.ts';
import { argumentError } from './faults.ts';
import type { Partition } from './partition.ts';

/** Where a receiver starts, from the selector filter the client attaches with. */
export interface StartPosition {
  field: 'offset' | 'sequence-number' | 'enqueued-time';
  value: string;
  inclusive: boolean;
}

// What the SDKs send: `amqp.annotation.x-opt-offset > '-1'`, `... x-opt-sequence-number >= '42'`, ...
const SELECTOR =
  /^\s*amqp\.annotation\.x-opt-(offset|sequence-number|enqueued-time)\s*(>=|>)\s*'([^']*)'\s*$/i;

export function parseSelector(filter: string | undefined): StartPosition | undefined {
  if (filter === undefined || filter.trim() === '') return undefined;
  const match = SELECTOR.exec(filter);
  if (!match) {
    throw argumentError(
      `The selector filter '${filter}' is not supported. Filter on amqp.annotation.x-opt-offset, amqp.annotation.x-opt-sequence-number or amqp.annotation.x-opt-enqueued-time with > or >=.`,
    );
  }
  const [, field, operator, value] = match as unknown as [string, StartPosition['field'], string, string];
  return { field: field.toLowerCase() as StartPosition['field'], value, inclusive: operator === '>=' };
}

/** Index of the first event for which `after` holds (`after` is false, then true, along the log). */
function firstIndex(events: readonly StoredEvent[], after: (event: StoredEvent) => boolean): number {
  let low = 0;
  let high = events.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (after(events[mid] as StoredEvent)) high = mid;
    else low = mid + 1;
  }
  return low;
}

function integer(value: string, what: string): number {
  if (!/^-?\d+$/.test(value)) throw argumentError(`The supplied ${what} '${value}' is invalid.`);
  return Number(value);
}

/** The sequence number of the first event a receiver with this start position gets. */
export function startSequenceNumber(partition: Partition, position: StartPosition | undefined): number {
  const begin = partition.beginSequenceNumber;
  const end = partition.endSequenceNumber;
  if (!position) return begin;
  const fromIndex = (index: number) => begin + index;
  const { events } = partition;
  switch (position.field) {
    case 'offset': {
      if (position.value === '@latest') return end;
      const offset = integer(position.value, 'offset');
      if (offset > partition.lastOffset) {
        throw argumentError(
          `The supplied offset '${offset}' is invalid. The last offset in the system is '${partition.lastOffset}'`,
        );
      }
      return fromIndex(
        firstIndex(events, (e) => (position.inclusive ? e.offset >= offset : e.offset > offset)),
      );
    }
    case 'sequence-number': {
      const sequenceNumber = integer(position.value, 'sequence number');
      const start = position.inclusive ? sequenceNumber : sequenceNumber + 1;
      if (start > end) {
        throw argumentError(
          `The supplied sequence number '${sequenceNumber}' is invalid. The last sequence number in the system is '${end - 1}'`,
        );
      }
      return Math.max(start, begin);
    }
    case 'enqueued-time': {
      const time = integer(position.value, 'enqueued time');
      return fromIndex(
        firstIndex(events, (e) => (position.inclusive ? e.enqueuedTime >= time : e.enqueuedTime > time)),
      );
    }
  }
}
