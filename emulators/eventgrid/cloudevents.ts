/**
 * CloudEvents 1.0 in structured JSON, as a topic whose input schema is `CloudEventSchemaV1_0` checks it:
 * one event (`application/cloudevents+json`) or a batch (`application/cloudevents-batch+json`), each
 * with `specversion` 1.0, `id`, `source` and `type`, lower-case alphanumeric extension attributes, and
 * either `data` or `data_base64`. Events keep what the publisher sent: Event Grid stamps nothing here.
 */
import {
  checkSize,
  type GridEvent,
  ISO_8601,
  invalid,
  nonConforming,
  parseJson,
  tokenName,
} from './events.ts';

/** A CloudEvent as published and delivered: the required attributes, then whatever else was sent. */
export interface CloudEvent {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  [attribute: string]: unknown;
}

const SCHEMA = 'CloudEventV10';
const REQUIRED = ['specversion', 'id', 'source', 'type'] as const;
const STRINGS = ['subject', 'time', 'datacontenttype', 'dataschema', 'data_base64'];
/** The spec's rule for extension attribute names (the SDKs check the same). */
const ATTRIBUTE_NAME = /^[a-z0-9]+$/;

export const isCloudEvent = (event: GridEvent | CloudEvent): event is CloudEvent => 'specversion' in event;

function checkEvent(input: unknown): CloudEvent {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw nonConforming(SCHEMA);
  checkSize(input);
  const event = input as Record<string, unknown>;
  for (const name of REQUIRED) {
    const value = event[name];
    if (value === undefined || value === null || (typeof value === 'string' && value.trim() === ''))
      throw invalid(
        `This resource is configured for '${SCHEMA}' schema and requires '${name}' property to be set.`,
      );
  }
  const unexpected = Object.keys(event).find((name) => name !== 'data_base64' && !ATTRIBUTE_NAME.test(name));
  if (unexpected !== undefined) {
    throw invalid(
      `This resource is configured for '${SCHEMA}' schema. Received unexpected property '${unexpected}' in JSON which does not conform to the expected schema.`,
    );
  }
  for (const name of [...REQUIRED, ...STRINGS]) {
    const value = event[name];
    if (value !== undefined && value !== null && typeof value !== 'string') throw nonConforming(SCHEMA);
  }
  if (event.specversion !== '1.0') {
    throw invalid(
      `Property 'specversion' was found to be set to '${event.specversion}', but was expected to be set to 1.0.`,
    );
  }
  const time = event.time as string | undefined | null;
  if (time != null && (!ISO_8601.test(time) || Number.isNaN(Date.parse(time))))
    throw invalid("The event time property 'time' was not a valid date/time.");
  if (event.data !== undefined && event.data_base64 !== undefined)
    throw invalid("Properties 'data' and 'data_base64' cannot be set at the same time.");
  return event as CloudEvent;
}

/**
 * Parses and checks a publish body; throws the EventGridError the service would answer. The content
 * type says whether one event or a batch is expected; a plain JSON type goes by the body's shape.
 */
export function parseCloudEvents(body: Buffer, contentType: string | undefined): CloudEvent[] {
  const parsed = parseJson(body);
  const media = (contentType ?? '').split(';')[0]?.trim().toLowerCase();
  const batch =
    media === 'application/cloudevents-batch+json' ||
    (media !== 'application/cloudevents+json' && Array.isArray(parsed));
  if (batch !== Array.isArray(parsed)) {
    throw invalid(
      `Unexpected token when reading JSON. Expected: ${batch ? 'StartArray' : 'StartObject'}, actual: ${tokenName(parsed)}.`,
    );
  }
  if (!batch) return [checkEvent(parsed)];
  if ((parsed as unknown[]).length === 0) throw nonConforming(SCHEMA);
  return (parsed as unknown[]).map(checkEvent);
}

/**
 * An Event Grid event as a CloudEvents subscription receives it (Event Grid schema in, CloudEvents out):
 * the topic becomes the source, the event type the type, and the data version the data schema.
 */
export function toCloudEvent(event: GridEvent): CloudEvent {
  return {
    specversion: '1.0',
    id: event.id,
    source: event.topic,
    subject: event.subject,
    type: event.eventType,
    time: event.eventTime,
    dataschema: `#${event.dataVersion}`,
    ...(event.data !== undefined && { data: event.data }),
  };
}
