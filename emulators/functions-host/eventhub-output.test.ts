/**
 * The Event Hubs output binding (`output.eventHub`) against the stack's Event Hubs emulator, read back
 * with the official consumer: what each value form becomes on the wire, one batch (one partition) per
 * invocation, and the failures (a missing hub or setting, an event too large) with the extension's words.
 */
import { join } from 'node:path';
import { EventHubConsumerClient, type EventPosition } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testContext, testDataDir, waitFor } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { type EventFeed, followEvents, hubEnds, readLog, startEventHubOutputHost } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let eventHubs: ComponentUnderTest;
let host: ComponentUnderTest;
let consumer: EventHubConsumerClient;
let feed: EventFeed;
let partitionIds: string[];

beforeAll(async () => {
  eventHubs = await startComponent('eventhubs', { port: 0 }, data.dir);
  const connectionString = eventHubs.endpoints.connectionString as string;
  consumer = new EventHubConsumerClient('$Default', connectionString, 'taskevents');
  // One subscription for the file, read back by position: a subscription each time attached a receiver
  // per partition (~0.25 s a test).
  feed = followEvents(consumer);
  // A hub's partitions are fixed at its creation: asked once, not at every read of where they end.
  partitionIds = await consumer.getPartitionIds();
  host = await startEventHubOutputHost(data.dir, logFile, {
    StreamHubConnection: connectionString,
    HubWithEntityPath: `${connectionString};EntityPath=taskevents`,
    HubIdentity__clientId: '00000000-0000-0000-0000-000000000000',
  });
});

afterAll(async () => {
  await host?.stop();
  await feed?.close();
  await consumer?.close();
  await eventHubs?.stop();
  data.remove();
});

const ends = () => hubEnds(consumer, partitionIds);
const receive = (from: Record<string, EventPosition>, count: number) => feed.after(from, count);

const post = (path: string) => fetch(`${host.endpoints.baseUrl}/api/${path}`, { method: 'POST' });

/** Runs sendEvents with value `form`; its events' bodies as text. */
async function sendForm(form: string, count: number): Promise<string[]> {
  const from = await ends();
  const response = await post(`events/${form}`);
  expect(response.status).toBe(200);
  return (await receive(from, count)).map((event) => event.body.toString('utf8'));
}

/** The runtime's failure lines for function `name`. */
const failures = (name: string) =>
  readLog(logFile).filter((e) =>
    e.message.startsWith(`Exception while executing function: Functions.${name}.`),
  );

describe('Event Hubs output (output.eventHub): what a value becomes', () => {
  it('serves the binding: no warning at start', async () => {
    // The warning would come before this line.
    await waitFor('the start in the log', () =>
      readLog(logFile).some((e) => e.message.startsWith('Host started')),
    );
    const warnings = readLog(logFile).filter((e) => e.message.includes('bindings not served'));
    expect(warnings).toEqual([]);
  });

  it('sends a string as one event of its UTF-8 text', async () => {
    expect(await sendForm('text', 1)).toEqual(['plain text: é']);
  });

  it('sends a Buffer as one event of its bytes', async () => {
    const from = await ends();
    expect((await post('events/buffer')).status).toBe(200);
    const [event] = await receive(from, 1);
    expect(event?.body).toEqual(Buffer.from([0, 1, 2, 255]));
  });

  it('sends an object as JSON, indented as the host writes it (azure-functions-host#9581)', async () => {
    const object = { id: 't-1', title: 'Write tests', tags: ['a', 'b'], done: false, meta: {} };
    const [body] = await sendForm('object', 1);
    expect(body).toBe(
      '{\n  "id": "t-1",\n  "title": "Write tests",\n  "tags": [\n    "a",\n    "b"\n  ],\n  "done": false,\n  "meta": {}\n}',
    );
    expect(JSON.parse(body ?? '')).toEqual(object);
  });

  it('sends an array as one event per element, each as JToken.ToString() writes it', async () => {
    // ['first', { id: 2 }, 3, true, null, [1]]
    expect(await sendForm('array', 6)).toEqual(['first', '{\n  "id": 2\n}', '3', 'True', '', '[\n  1\n]']);
  });

  it('parses a string that looks like JSON, as the host does: an object, or an array of events', async () => {
    expect(await sendForm('jsonText', 1)).toEqual(['{\n  "id": "t-2",\n  "n": [\n    1,\n    2\n  ]\n}']);
    expect(await sendForm('jsonArrayText', 2)).toEqual(['x', '{\n  "y": 1\n}']);
  });

  it('sends numbers as their text', async () => {
    expect(await sendForm('number', 1)).toEqual(['42']);
    expect(await sendForm('fraction', 1)).toEqual(['1.5']);
  });

  it('sends nothing for an empty array, and the run succeeds', async () => {
    const from = await ends();
    expect((await post('events/empty')).status).toBe(200);
    expect(await ends()).toEqual(from);
  });

  it('takes a returned value ($return) as well', async () => {
    const { secrets } = await testContext(data.dir);
    const from = await ends();
    const event = {
      id: '1',
      subject: 's',
      eventType: 't',
      eventTime: new Date().toISOString(),
      data: { form: 'text' },
    };
    const response = await fetch(`${host.endpoints.baseUrl}/admin/functions/returnEvents`, {
      method: 'POST',
      headers: { 'x-functions-key': secrets.masterKey, 'content-type': 'application/json' },
      body: JSON.stringify({ input: JSON.stringify(event) }),
    });
    expect(response.status).toBe(202);
    const [received] = await receive(from, 1);
    expect(received?.body.toString('utf8')).toBe('plain text: é');
  });
});

describe('Event Hubs output: batches and partitions', () => {
  it("sends an invocation's events in one batch: one partition, consecutive sequence numbers", async () => {
    const from = await ends();
    expect((await post('events/array')).status).toBe(200);
    const events = await receive(from, 6);
    expect(new Set(events.map((e) => e.partitionId)).size).toBe(1);
    const first = events[0]?.sequenceNumber ?? -1;
    expect(events.map((e) => e.sequenceNumber)).toEqual([0, 1, 2, 3, 4, 5].map((n) => first + n));
  });

  it('sends a full batch and begins another when the next event does not fit', async () => {
    const from = await ends();
    expect((await post('events/spill')).status).toBe(200);
    const events = await receive(from, 3);
    const bodies = (letter: string) =>
      events.filter((e) => e.body.equals(Buffer.from(letter.repeat(100_000))));
    const [a, b, c] = ['a', 'b', 'c'].map(bodies);
    expect([a?.length, b?.length, c?.length]).toEqual([1, 1, 1]);
    // a and b are one batch, so one partition, one after the other.
    expect(b?.[0]?.partitionId).toBe(a?.[0]?.partitionId);
    expect(b?.[0]?.sequenceNumber).toBe((a?.[0]?.sequenceNumber ?? -2) + 1);
  });

  it("takes the hub from a connection string's EntityPath over eventHubName", async () => {
    const from = await ends();
    expect((await post('entityPath')).status).toBe(200);
    const [event] = await receive(from, 1);
    expect(event?.body.toString('utf8')).toBe('via entityPath');
  });
});

describe('Event Hubs output: failures fail the invocation (500) and send nothing', () => {
  /** Runs `path`, which must fail having sent nothing; the failure's line. */
  const fails = async (path: string, name: string) => {
    const before = failures(name).length;
    const from = await ends();
    expect((await post(path)).status).toBe(500);
    expect(await ends()).toEqual(from);
    return (await waitFor(`the failure of ${name}`, () => failures(name)[before])).message;
  };

  it("an event larger than the hub takes: the extension's words", async () => {
    expect(await fails('events/tooLarge', 'sendEvents')).toContain(
      'Exception: Event is too large. Event is approximately 300000b and max size is 262144b\n',
    );
  });

  it("a hub that does not exist: the service's answer", async () => {
    expect(await fails('missingHub', 'missingHub')).toMatch(
      /Exception: The messaging entity 'sb:\/\/127\.0\.0\.1:\d+\/nohub' could not be found\./,
    );
  });

  it("a connection setting that is not set: the extension's words", async () => {
    expect(await fails('missingSetting', 'missingSetting')).toContain(
      "Exception: EventHub account connection string with name 'MissingHubConnection' does not exist in the settings. Make sure that it is a defined App Setting.\n",
    );
  });

  it("identity settings without __fullyQualifiedNamespace: the extension's words", async () => {
    expect(await fails('identityWithoutNamespace', 'identityWithoutNamespace')).toContain(
      "Exception: Connection should have an 'fullyQualifiedNamespace' property or be a string representing a connection string.\n",
    );
  });

  it("no connection at all: the extension's words", async () => {
    expect(await fails('noConnection', 'noConnection')).toContain(
      'Exception: No event hub sender named taskevents\n',
    );
  });

  it('a string that looks like JSON but is not fails the run', async () => {
    expect(await fails('events/notJsonText', 'sendEvents')).toMatch(/Exception: .*JSON/);
  });
});
