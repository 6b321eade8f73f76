/** An ES module app: Event Grid deliveries at the extension webhook, the Event Grid output against a test topic. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StackSecrets } from '../core/secrets.ts';
import { testContext, testDataDir, waitFor } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { appPath, readLog } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let host: ComponentUnderTest;
let secrets: StackSecrets;
let topic: Server;
/** Each request the stand-in topic took, with the ids of its events. */
const published: { url?: string; headers: IncomingHttpHeaders; body: unknown; ids: string[] }[] = [];
/**
 * The topic's answers to the requests for the event with this id (the request's first): each in turn,
 * the last one from then on (a topic failing, then coming back); 200 for any other. Keyed by event, so
 * that the output tests run side by side.
 */
const topicAnswers = new Map<string, number[]>();
/** The requests that carried any of these events, in the order the topic took them. */
const publishedWith = (...ids: string[]) => published.filter((p) => p.ids.some((id) => ids.includes(id)));
/** Event Grid's documented limit for a request. */
const ONE_MB = 1_048_576;

const base = () => host.endpoints.baseUrl as string;
const webhook = (query: string, init: RequestInit) =>
  fetch(`${base()}/runtime/webhooks/eventgrid?${query}`, init);
const notify = (body: unknown, code = secrets.eventGridExtensionKey) =>
  webhook(`functionName=onTaskCreated&code=${encodeURIComponent(code)}`, {
    method: 'POST',
    headers: { 'aeg-event-type': 'Notification', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const logged = (message: string) => readLog(logFile).filter((e) => e.message === message);

const gridEvent = (id: string, data: unknown) => ({
  id,
  topic: '/subscriptions/x/resourceGroups/rg/providers/Microsoft.EventGrid/topics/taskcreatedtopic',
  subject: `tasks/${id}`,
  eventType: 'Microsoft.DocumentDB.DocumentCreated',
  eventTime: '2026-01-01T00:00:00Z',
  data,
  dataVersion: '1.0',
  metadataVersion: '1',
});

beforeAll(async () => {
  // A stand-in Event Grid topic: records what the output binding publishes.
  topic = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const events = JSON.parse(body.toString()) as { id: string }[];
    const ids = events.map((event) => event.id);
    published.push({ url: req.url, headers: req.headers, body: events, ids });
    const answers = topicAnswers.get(ids[0] as string) ?? [200];
    if (body.length > ONE_MB) res.writeHead(413).end('The maximum size (1049600) has been exceeded.');
    else res.writeHead((answers.length > 1 ? answers.shift() : answers[0]) as number).end();
  });
  await new Promise<void>((resolve) => topic.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(topic.address() as AddressInfo).port}/api/events`;
  host = await startComponent(
    'functions',
    {
      port: 0,
      appDir: appPath('app-esm'),
      logFile,
      settings: { AzureWebJobsSecretStorageType: 'files', TopicEndpoint: endpoint, TopicKey: 'topic-key' },
    },
    data.dir,
  );
  secrets = (await testContext(data.dir)).secrets;
});

afterAll(async () => {
  await host?.stop();
  await new Promise<void>((resolve) => topic?.close(() => resolve()));
  data.remove();
});

describe('an ES module app', () => {
  it('loads through import() and honours an empty routePrefix', async () => {
    expect(await (await fetch(`${base()}/ping`)).text()).toBe('pong');
    expect((await fetch(`${base()}/api/ping`)).status).toBe(404);
  });

  it('runs a runOnStartup timer (without a schedule monitor) at start', async () => {
    await waitFor('the startup run', () => logged('startup ran isPastDue=false').length === 1);
  });

  it('reports listeners that cannot start (no Event Hubs connection) and keeps serving', async () => {
    const prefix = "The listener for function 'Functions.ProcessTaskEvents' was unable to start.";
    await waitFor('the listener error', () => readLog(logFile).some((e) => e.message.startsWith(prefix)));
    expect((await fetch(`${base()}/ping`)).status).toBe(200);
  });
});

describe('Event Grid trigger webhook', () => {
  it('requires the eventgrid_extension system key (or the master key)', async () => {
    const init = { method: 'POST', headers: { 'aeg-event-type': 'Notification' }, body: '[]' };
    expect((await webhook('functionName=onTaskCreated', init)).status).toBe(401);
    expect((await webhook(`functionName=onTaskCreated&code=${secrets.functionKey}`, init)).status).toBe(401);
    expect((await notify([gridEvent('m1', { Title: 'via master' })], secrets.masterKey)).status).toBe(202);
  });

  it('answers 404 for an unknown function', async () => {
    const response = await webhook(`functionName=nope&code=${secrets.eventGridExtensionKey}`, {
      method: 'POST',
      headers: { 'aeg-event-type': 'Notification' },
      body: '[]',
    });
    expect(response.status).toBe(404);
    expect(await response.text()).toBe("cannot find function: 'nope'");
  });

  it('finds the function by its name as registered, case and all (the extension keys a Dictionary by it)', async () => {
    const response = await webhook(`functionName=ONTASKCREATED&code=${secrets.eventGridExtensionKey}`, {
      method: 'POST',
      headers: { 'aeg-event-type': 'Notification' },
      body: JSON.stringify([gridEvent('case', { Title: 'case' })]),
    });
    expect(response.status).toBe(404);
    expect(await response.text()).toBe("cannot find function: 'ONTASKCREATED'");
  });

  it('completes the subscription validation handshake (Event Grid schema and CloudEvents)', async () => {
    const validate = (body: unknown) =>
      webhook(`functionName=onTaskCreated&code=${secrets.eventGridExtensionKey}`, {
        method: 'POST',
        headers: { 'aeg-event-type': 'SubscriptionValidation' },
        body: JSON.stringify(body),
      });
    const grid = await validate([
      {
        ...gridEvent('v', { validationCode: 'code-123' }),
        eventType: 'Microsoft.EventGrid.SubscriptionValidationEvent',
      },
    ]);
    expect(grid.status).toBe(200);
    expect(await grid.json()).toEqual({ validationResponse: 'code-123' });
    const cloud = await validate({
      specversion: '1.0',
      id: 'v',
      source: 's',
      type: 't',
      data: '{"validationCode":"code-456"}',
    });
    expect(await cloud.json()).toEqual({ validationResponse: 'code-456' });
    const options = await fetch(
      `${base()}/runtime/webhooks/eventgrid?code=${secrets.eventGridExtensionKey}`,
      {
        method: 'OPTIONS',
        headers: { 'webhook-request-origin': 'eventgrid.azure.net' },
      },
    );
    expect(options.headers.get('webhook-allowed-origin')).toBe('eventgrid.azure.net');
  });

  it('runs the function once per event of an Event Grid schema array and answers 202', async () => {
    const response = await notify([
      gridEvent('1', { id: '1', Title: 'One' }),
      gridEvent('2', { id: '2', Title: 'Two' }),
    ]);
    expect(response.status).toBe(202);
    const one = await waitFor(
      'event 1',
      () =>
        logged('event Microsoft.DocumentDB.DocumentCreated tasks/1 {"id":"1","Title":"One"}').length === 1 &&
        logged('event Microsoft.DocumentDB.DocumentCreated tasks/1 {"id":"1","Title":"One"}'),
    );
    const two = await waitFor(
      'event 2',
      () =>
        logged('event Microsoft.DocumentDB.DocumentCreated tasks/2 {"id":"2","Title":"Two"}').length === 1 &&
        logged('event Microsoft.DocumentDB.DocumentCreated tasks/2 {"id":"2","Title":"Two"}'),
    );
    expect(one[0]?.invocationId).not.toBe(two[0]?.invocationId);
    const executing = readLog(logFile).find((e) => e.invocationId === one[0]?.invocationId);
    expect(executing?.message).toMatch(/Reason='EventGrid trigger fired at \d{4}-/);
  });

  it('gives the function the trigger metadata the extension binds: data, not the envelope', async () => {
    expect((await notify([gridEvent('meta', { id: 'meta' })])).status).toBe(202);
    await waitFor('the metadata', () => logged('metadata of meta: data').length === 1);
  });

  it('accepts CloudEvents, single and batched', async () => {
    const cloud = (id: string) => ({
      specversion: '1.0',
      id,
      source: '/tasks',
      type: 'Task.Created',
      subject: `c/${id}`,
      data: { id },
    });
    expect((await notify(cloud('c1'))).status).toBe(202);
    expect((await notify([cloud('c2'), cloud('c3')])).status).toBe(202);
    for (const id of ['c1', 'c2', 'c3']) {
      await waitFor(
        `CloudEvent ${id}`,
        () => logged(`event Task.Created c/${id} {"id":"${id}"}`).length === 1,
      );
    }
  });

  it('answers 500 without details when a run fails, 400 for bodies that are not events, 202 for none', async () => {
    const failed = await notify([gridEvent('f', { fail: true })]);
    expect(failed.status).toBe(500);
    expect(await failed.text()).toBe('Exception while executing function: Functions.onTaskCreated');
    const bad = (headers: Record<string, string>, body: string) =>
      webhook(`functionName=onTaskCreated&code=${secrets.eventGridExtensionKey}`, {
        method: 'POST',
        headers,
        body,
      });
    expect((await bad({ 'aeg-event-type': 'Notification' }, 'not json')).status).toBe(400);
    expect((await bad({ 'aeg-event-type': 'Notification' }, '[1,2]')).status).toBe(400);
    // No events is nothing to run: the extension answers 202, as for a batch that all ran.
    expect((await bad({ 'aeg-event-type': 'Notification' }, '[]')).status).toBe(202);
    expect((await bad({}, '[]')).status).toBe(400);
    expect((await fetch(`${base()}/ping`)).status).toBe(200);
  });

  it('runs by hand through the admin API with the event as input', async () => {
    const response = await fetch(`${base()}/admin/functions/onTaskCreated`, {
      method: 'POST',
      headers: { 'x-functions-key': secrets.masterKey },
      body: JSON.stringify({ input: JSON.stringify(gridEvent('manual', { by: 'hand' })) }),
    });
    expect(response.status).toBe(202);
    await waitFor(
      'the manual run',
      () => logged('event Microsoft.DocumentDB.DocumentCreated tasks/manual {"by":"hand"}').length === 1,
    );
  });
});

const publish = (events: unknown[]) =>
  fetch(`${base()}/publish`, { method: 'POST', body: JSON.stringify(events) });
const failure = (eventId: string) =>
  waitFor('the failed invocation', () =>
    readLog(logFile).find(
      (e) =>
        e.function === 'publish' &&
        e.message.startsWith('Exception while executing') &&
        e.message.includes(`(id ${eventId})`),
    ),
  );

// Side by side, each on events of its own: the retries' waits (the SDK policy's real time) overlap.
describe.concurrent('Event Grid output binding', () => {
  it('posts the events as one JSON array with the topic key in aeg-sas-key', async () => {
    const events = [gridEvent('o1', { Title: 'out' })];
    expect((await fetch(`${base()}/publish`, { method: 'POST', body: JSON.stringify(events) })).status).toBe(
      202,
    );
    const requests = publishedWith('o1');
    expect(requests).toHaveLength(1);
    expect(requests[0]?.headers['aeg-sas-key']).toBe('topic-key');
    expect(requests[0]?.headers['content-type']).toBe('application/json');
    expect(requests[0]?.body).toEqual(events);
  });

  it('sends CloudEvents with the CloudEvents batch content type; a single event becomes an array', async () => {
    const event = { specversion: '1.0', id: 'o2', source: '/tasks', type: 'Task.Created', data: {} };
    expect((await fetch(`${base()}/publish`, { method: 'POST', body: JSON.stringify(event) })).status).toBe(
      202,
    );
    const requests = publishedWith('o2');
    expect(requests[0]?.headers['content-type']).toBe('application/cloudevents-batch+json; charset=utf-8');
    expect(requests[0]?.body).toEqual([event]);
  });

  it('fails the invocation (500) when the topic refuses the events', async () => {
    topicAnswers.set('o3', [401]);
    expect(
      (await fetch(`${base()}/publish`, { method: 'POST', body: JSON.stringify([gridEvent('o3', {})]) }))
        .status,
    ).toBe(500);
  });

  it('retries a topic that fails for a moment (503, 503) as the SDK does, and publishes once', async () => {
    topicAnswers.set('o4', [503, 503, 200]);
    const events = [gridEvent('o4', {})];
    expect((await publish(events)).status).toBe(202);
    expect(publishedWith('o4').map((p) => p.body)).toEqual([events, events, events]);
  });

  it('gives up after the SDK’s 3 retries: the invocation fails, naming the event and the answer', async () => {
    topicAnswers.set('o5', [503]);
    expect((await publish([gridEvent('o5', {})])).status).toBe(500);
    expect(publishedWith('o5')).toHaveLength(4);
    expect((await failure('o5')).message).toContain(
      'Exception: eventGrid output: 1 of 1 event(s) not published. Event subject tasks/o5 (id o5): the topic answered 503 \n',
    );
  }, 60_000);

  it('sends requests of at most 1 MB: an event the topic refuses (413) fails alone, the others are published', async () => {
    const third = 'x'.repeat(ONE_MB / 3);
    const big = gridEvent('big', { text: 'x'.repeat(ONE_MB) });
    const events = [gridEvent('s1', third), gridEvent('s2', third), big, gridEvent('s3', {})];
    expect((await publish(events)).status).toBe(500);
    expect(publishedWith('s1', 's2', 'big', 's3').map((p) => p.ids)).toEqual([['s1', 's2'], ['big'], ['s3']]);
    const { message } = await failure('big');
    expect(message).toContain(
      'Exception: eventGrid output: 1 of 4 event(s) not published. Event subject tasks/big (id big): the topic answered 413 The maximum size (1049600) has been exceeded.\n',
    );
  });
});

// Last: it stops the file's host (a host of its own would cost a start).
describe('a host that stops while its Event Grid output retries', () => {
  it('ends the retries: the invocation fails saying so, and no retry follows the stop', async () => {
    topicAnswers.set('c1', [503]);
    // The stop closes the HTTP connection (the host does not wait for HTTP invocations); what counts
    // is the invocation's end, in the log.
    const call = publish([gridEvent('c1', {})]).catch(() => undefined);
    await waitFor('the first try', () => publishedWith('c1').length === 1);
    await host.stop();
    await call;
    expect(publishedWith('c1').map((p) => p.url)).toEqual(['/api/events']);
    expect(readLog(logFile).map((e) => e.message)).toContainEqual(
      expect.stringContaining(
        'Exception: eventGrid output: 1 of 1 event(s) not published. Event subject tasks/c1 (id c1): the host is stopping (its last try: the topic answered 503 )\n',
      ),
    );
  });
});
