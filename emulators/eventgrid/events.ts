/**
 * The Event Grid event schema as a topic whose input schema is `EventGridSchema` checks it: a JSON array
 * of events, each with `id`, `subject`, `eventType` and `eventTime`, no property outside the schema, and
 * the service stamping `topic`, `metadataVersion` and (when absent) an empty `dataVersion`.
 */
import { EventGridError } from './errors.ts';

/** An event as delivered: every envelope property stamped. */
export interface GridEvent {
  id: string;
  subject: string;
  data?: unknown;
  eventType: string;
  dataVersion: string;
  metadataVersion: '1';
  eventTime: string;
  topic: string;
}

/**
 * Limits Event Grid enforces, as measured against the service (its documentation says 1 MB for both):
 * the whole request, and each event of it.
 */
export const MAX_REQUEST_BYTES = 1_536_000;
const MAX_EVENT_BYTES = 1_049_600;

const SCHEMA = 'EventGridEvent';
const PROPERTIES = new Set([
  'id',
  'topic',
  'subject',
  'data',
  'eventType',
  'eventTime',
  'dataVersion',
  'metadataVersion',
]);
/** The order in which the service reports missing properties. */
const REQUIRED = ['subject', 'id', 'eventType', 'eventTime'] as const;
/** ISO 8601 as the service reads it: the offset may lack its colon (`date +%z` writes `+0000`). */
export const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

export const invalid = (message: string) => new EventGridError(400, 'InputJsonInvalid', message);
export const nonConforming = (schema = SCHEMA) =>
  invalid(
    `This resource is configured to receive event in '${schema}' schema. The JSON received does not conform to the expected schema.`,
  );

/** How Json.NET names the token it found where it wanted an array or object. */
export function tokenName(value: unknown): string {
  if (Array.isArray(value)) return 'StartArray';
  if (value === null) return 'Null';
  if (typeof value === 'object') return 'StartObject';
  if (typeof value === 'number') return Number.isInteger(value) ? 'Integer' : 'Float';
  return typeof value === 'boolean' ? 'Boolean' : 'String';
}

/** Refuses one event over the per-event limit. */
export function checkSize(event: object): void {
  if (Buffer.byteLength(JSON.stringify(event)) > MAX_EVENT_BYTES) {
    throw new EventGridError(
      413,
      'PayloadTooLarge',
      `The maximum size (${MAX_EVENT_BYTES}) has been exceeded.`,
      false,
    );
  }
}

function checkEvent(input: unknown, topicId: string): GridEvent {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw nonConforming();
  const event = input as Record<string, unknown>;
  checkSize(event);
  const unexpected = Object.keys(event).find((name) => !PROPERTIES.has(name));
  if (unexpected !== undefined) {
    throw invalid(
      `This resource is configured for '${SCHEMA}' schema. Received unexpected property '${unexpected}' in JSON which does not conform to the expected schema.`,
    );
  }
  for (const name of REQUIRED) {
    const value = event[name];
    if (value === undefined || value === null || (typeof value === 'string' && value.trim() === ''))
      throw invalid(
        `This resource is configured for '${SCHEMA}' schema and requires '${name}' property to be set.`,
      );
  }
  for (const name of [...REQUIRED, 'topic', 'dataVersion', 'metadataVersion']) {
    const value = event[name];
    if (value !== undefined && value !== null && typeof value !== 'string') throw nonConforming();
  }
  const { id, subject, eventType, eventTime, data, dataVersion, metadataVersion, topic } = event as Record<
    string,
    string | undefined
  >;
  if (!ISO_8601.test(eventTime ?? '') || Number.isNaN(Date.parse(eventTime ?? '')))
    throw invalid("The event time property 'eventTime' was not a valid date/time.");
  if (metadataVersion != null && metadataVersion !== '1') {
    throw invalid(
      `Property 'metadataVersion' was found to be set to '${metadataVersion}', but was expected to either be null or be set to 1.`,
    );
  }
  // A publisher may name the topic, but only this one (ARM ids compare case-insensitively).
  if (topic != null && topic !== '' && topic.toLowerCase() !== topicId.toLowerCase()) {
    throw invalid(
      `Property 'topic' was found to be set to '${topic}', but was expected to either be null/empty.`,
    );
  }
  return {
    id: id as string,
    subject: subject as string,
    ...(data !== undefined && { data }),
    eventType: eventType as string,
    dataVersion: dataVersion ?? '',
    metadataVersion: '1',
    eventTime: eventTime as string,
    topic: topicId,
  };
}

/** A publish body as JSON, or the service's answer to one that is not. */
export function parseJson(body: Buffer): unknown {
  const text = body.toString('utf8');
  if (text.trim() === '') throw invalid('Unexpected end when reading JSON.');
  try {
    return JSON.parse(text);
  } catch {
    throw invalid('Unexpected character encountered while parsing JSON.');
  }
}

/** Parses and checks a publish body; throws the EventGridError the service would answer. */
export function parseEvents(body: Buffer, topicId: string): GridEvent[] {
  const parsed = parseJson(body);
  if (!Array.isArray(parsed))
    throw invalid(`Unexpected token when reading JSON. Expected: StartArray, actual: ${tokenName(parsed)}.`);
  if (parsed.length === 0) throw nonConforming();
  return parsed.map((event) => checkEvent(event, topicId));
}
