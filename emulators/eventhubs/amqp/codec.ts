/**
 * Section-level AMQP message surgery. Events are kept as the bytes the producer sent; on delivery only
 * the message-annotations section is rewritten (adding x-opt-sequence-number, x-opt-offset, …), so
 * application properties and body reach consumers with their exact AMQP types.
 */
import rhea, { type Typed } from 'rhea';
import { decodeError } from '../service/faults.ts';
import type { StoredEvent } from '../storage/log-store.ts';

// rhea's codec objects are untyped in its typings; this is the part used here.
interface TypedValue {
  value: unknown;
  descriptor?: { value: unknown };
}
interface RheaTypes {
  Reader: new (buffer: Buffer) => { position: number; remaining(): number; read(): TypedValue };
  Writer: new () => { write(value: unknown): void; toBuffer(): Buffer };
  Map32(items: unknown[]): Typed;
  wrap_ulong(value: number): Typed;
  wrap_symbol(value: string): Typed;
  wrap_string(value: string): Typed;
  wrap_long(value: number): Typed;
  wrap_timestamp(value: number): Typed;
  described(descriptor: Typed, value: Typed): unknown;
}
const types = rhea.types as unknown as RheaTypes;

const HEADER = 0x70;
const DELIVERY_ANNOTATIONS = 0x71;
const MESSAGE_ANNOTATIONS = 0x72;
const DATA = 0x75;
const FOOTER = 0x78;
const SYMBOLIC: Record<string, number> = {
  'amqp:header:list': HEADER,
  'amqp:delivery-annotations:map': DELIVERY_ANNOTATIONS,
  'amqp:message-annotations:map': MESSAGE_ANNOTATIONS,
  'amqp:data:binary': DATA,
};

interface Section {
  code: number;
  start: number;
  end: number;
  typed: TypedValue;
}

function sections(data: Buffer): Section[] {
  const found: Section[] = [];
  try {
    const reader = new types.Reader(data);
    while (reader.remaining() > 0) {
      const start = reader.position;
      const typed = reader.read();
      // rhea slices past the end without complaint: a declared length beyond the data is a truncation.
      if (reader.position > data.length) throw new RangeError('truncated');
      const descriptor = typed.descriptor?.value;
      const code = typeof descriptor === 'string' ? (SYMBOLIC[descriptor] ?? -1) : Number(descriptor);
      found.push({ code, start, end: reader.position, typed });
    }
  } catch {
    throw decodeError('The message could not be decoded as an AMQP message.');
  }
  if (found.some((section) => section.typed.descriptor === undefined)) {
    throw decodeError('The message contains a section that is not a described AMQP section.');
  }
  // A message's body is one or more data or sequence sections, or one value section.
  if (!found.some((section) => section.code >= DATA && section.code < FOOTER)) {
    throw decodeError('The message has no body section.');
  }
  return found;
}

/** Alternating key/value items of an annotations map, keys as plain strings. */
function mapItems(section: Section | undefined): [string, Typed][] {
  const items = (section?.typed.value ?? []) as TypedValue[];
  const pairs: [string, Typed][] = [];
  for (let i = 0; i + 1 < items.length; i += 2) {
    pairs.push([String((items[i] as TypedValue).value), items[i + 1] as unknown as Typed]);
  }
  return pairs;
}

function encodeMap(code: number, entries: [string, Typed][]): Buffer {
  const writer = new types.Writer();
  const items = entries.flatMap(([key, value]) => [types.wrap_symbol(key), value]);
  writer.write(types.described(types.wrap_ulong(code), types.Map32(items)));
  return writer.toBuffer();
}

const PARTITION_KEY = 'x-opt-partition-key';

function partitionKeyOf(section: Section | undefined): string | undefined {
  const value = mapItems(section).find(([key]) => key === PARTITION_KEY)?.[1] as TypedValue | undefined;
  return typeof value?.value === 'string' ? value.value : undefined;
}

/**
 * The events in one transfer. Batches (message format 0x80013700) carry each event as a whole encoded
 * message in a data section; a plain message (format 0) is itself the event.
 */
export function splitTransfer(
  data: Buffer,
  batched: boolean,
): { partitionKey: string | undefined; events: Buffer[] } {
  const found = sections(data);
  const partitionKey = partitionKeyOf(found.find((s) => s.code === MESSAGE_ANNOTATIONS));
  if (!batched) return { partitionKey, events: [data] };
  const body = found.filter((s) => s.code >= DATA && s.code < FOOTER);
  if (body.some((s) => s.code !== DATA || !Buffer.isBuffer(s.typed.value))) {
    throw decodeError('A batched message must carry its events as data sections.');
  }
  const events = body.map((s) => s.typed.value as Buffer);
  for (const event of events) sections(event);
  return { partitionKey, events };
}

const annotated = new WeakMap<StoredEvent, { head: Buffer; tail: Buffer }>();

/** The event as delivered: the service's annotations merged into its message annotations. */
function annotate(event: StoredEvent): { head: Buffer; tail: Buffer } {
  const cached = annotated.get(event);
  if (cached) return cached;
  const found = sections(event.message);
  const header = found.find((s) => s.code === HEADER);
  const existing = found.find((s) => s.code === MESSAGE_ANNOTATIONS);
  const ours: [string, Typed][] = [
    ['x-opt-sequence-number', types.wrap_long(event.sequenceNumber)],
    ['x-opt-offset', types.wrap_string(String(event.offset))],
    ['x-opt-enqueued-time', types.wrap_timestamp(event.enqueuedTime)],
  ];
  if (event.partitionKey !== undefined) ours.push([PARTITION_KEY, types.wrap_string(event.partitionKey)]);
  const names = new Set(ours.map(([key]) => key));
  const merged = [...mapItems(existing).filter(([key]) => !names.has(key)), ...ours];
  const rest = found
    .filter((s) => s.code > MESSAGE_ANNOTATIONS)
    .map((s) => event.message.subarray(s.start, s.end));
  const result = {
    head: header ? event.message.subarray(header.start, header.end) : Buffer.alloc(0),
    tail: Buffer.concat([encodeMap(MESSAGE_ANNOTATIONS, merged), ...rest]),
  };
  annotated.set(event, result);
  return result;
}

export interface RuntimeInfo {
  lastSequenceNumber: number;
  lastOffset: string;
  lastEnqueuedTime: number;
  now: number;
}

/**
 * Bytes of one delivery. With `runtime` (the receiver asked for the runtime metric capability), the
 * partition's last-enqueued information travels as delivery annotations.
 */
export function deliveryBytes(event: StoredEvent, runtime?: RuntimeInfo): Buffer {
  const { head, tail } = annotate(event);
  if (!runtime) return head.length ? Buffer.concat([head, tail]) : tail;
  const metrics = encodeMap(DELIVERY_ANNOTATIONS, [
    ['last_enqueued_sequence_number', types.wrap_long(runtime.lastSequenceNumber)],
    ['last_enqueued_offset', types.wrap_string(runtime.lastOffset)],
    ['last_enqueued_time_utc', types.wrap_timestamp(runtime.lastEnqueuedTime)],
    ['runtime_info_retrieval_time_utc', types.wrap_timestamp(runtime.now)],
  ]);
  return Buffer.concat([head, metrics, tail]);
}
