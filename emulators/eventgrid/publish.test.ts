import { createHmac } from 'node:crypto';
import {
  AzureKeyCredential,
  AzureSASCredential,
  EventGridPublisherClient,
  generateSharedAccessSignature,
} from '@azure/eventgrid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorContext, RunningEmulator } from '../core/emulator.ts';
import { startEmulator, testContext, testDataDir } from '../core/testing.ts';
import eventgrid from './index.ts';
import { actionsOf, REPORT, startReceiver } from './testing.ts';

const TYPE = 'Microsoft.DocumentDB.DocumentCreated';
const TOPIC_ID =
  '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/taskstack/providers/microsoft.eventgrid/topics/taskcreatedtopic';

const data = testDataDir();
let context: EmulatorContext;
let running: RunningEmulator;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let endpoint: string;

beforeAll(async () => {
  context = await testContext(data.dir, { inMemory: true });
  receiver = await startReceiver();
  running = await startEmulator(eventgrid, { port: 0, functionsBaseUrl: receiver.baseUrl }, context);
  endpoint = running.endpoints.taskcreatedtopic as string;
});
afterAll(async () => {
  await running?.stop();
  await receiver?.stop();
  data.remove();
});

const task = (id: string) => ({ id, Title: `Task ${id}`, Description: 'd', DueDate: '2030-01-01' });
const validEvent = (id: string) => ({
  id,
  subject: `tasks/${id}`,
  data: task(id),
  eventType: TYPE,
  eventTime: '2030-01-01T00:00:00Z',
  dataVersion: '1.0',
});

function post(
  body: unknown,
  headers: Record<string, string> = { 'aeg-sas-key': context.secrets.eventGridKey },
  url = endpoint,
) {
  return fetch(`${url}?api-version=2018-01-01`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Checks an Event Grid error answer and returns its message without the report suffix. */
async function errorOf(response: Response, status: number, code: string, detail: string, report = true) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  const text = await response.text();
  expect(text).not.toContain(context.secrets.eventGridKey);
  const { error } = JSON.parse(text) as {
    error: { code: string; message: string; details: { code: string; message: string }[] };
  };
  expect(error.code).toBe(code);
  expect(error.details).toEqual([{ code: detail, message: error.message }]);
  if (!report) return error.message;
  expect(error.message).toMatch(REPORT);
  expect(error.message).toContain(response.headers.get('x-ms-request-id'));
  return error.message.replace(REPORT, '');
}

describe('publishing with @azure/eventgrid', () => {
  it('EventGridPublisherClient with the topic key publishes; the event reaches the function stamped', async () => {
    const client = new EventGridPublisherClient(
      endpoint,
      'EventGrid',
      new AzureKeyCredential(context.secrets.eventGridKey),
    );
    await client.send([
      { id: 'sdk-1', eventType: TYPE, subject: 'tasks/sdk-1', dataVersion: '1.0', data: task('sdk-1') },
    ]);

    await expect.poll(() => receiver.deliveriesOf('sdk-1').length, { timeout: 60_000 }).toBe(1);
    const [delivery] = receiver.deliveriesOf('sdk-1');
    expect(delivery?.url.pathname).toBe('/runtime/webhooks/eventgrid');
    expect(Object.fromEntries(delivery?.url.searchParams ?? [])).toEqual({
      functionName: 'TaskCreatedNotification',
      code: context.secrets.eventGridExtensionKey,
    });
    expect(delivery?.headers).toMatchObject({
      'content-type': 'application/json; charset=utf-8',
      'aeg-event-type': 'Notification',
      'aeg-subscription-name': 'TASKCREATEDSUB',
      'aeg-delivery-count': '0',
      'aeg-data-version': '1.0',
      'aeg-metadata-version': '1',
    });
    expect(delivery?.body).toEqual([
      {
        id: 'sdk-1',
        subject: 'tasks/sdk-1',
        data: task('sdk-1'),
        eventType: TYPE,
        dataVersion: '1.0',
        metadataVersion: '1',
        eventTime: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        topic: TOPIC_ID,
      },
    ]);
  });

  it('a shared access signature made by generateSharedAccessSignature publishes; an expired one is refused', async () => {
    const key = new AzureKeyCredential(context.secrets.eventGridKey);
    const valid = await generateSharedAccessSignature(
      endpoint,
      key,
      new Date(context.clock.now() + 3_600_000),
    );
    const client = new EventGridPublisherClient(endpoint, 'EventGrid', new AzureSASCredential(valid));
    await client.send([
      { id: 'sas-1', eventType: TYPE, subject: 'tasks/sas-1', dataVersion: '1.0', data: {} },
    ]);
    await expect.poll(() => receiver.deliveriesOf('sas-1').length, { timeout: 60_000 }).toBe(1);

    // The expiry is read on the stack clock.
    const soon = await generateSharedAccessSignature(endpoint, key, new Date(context.clock.now() + 60_000));
    context.clock.advance(120_000);
    const expired = await post([validEvent('sas-2')], { 'aeg-sas-token': soon });
    expect(await errorOf(expired, 401, 'Unauthorized', 'Unauthorized')).toBe(
      'The request authorization key is not authorized for 127.0.0.1.',
    );
    const forged = valid.replace(/s=[^&]+$/, `s=${encodeURIComponent(Buffer.alloc(32).toString('base64'))}`);
    expect((await post([validEvent('sas-3')], { 'aeg-sas-token': forged })).status).toBe(401);
    const malformed = await post([validEvent('sas-4')], { 'aeg-sas-token': 'not-a-token' });
    expect(await errorOf(malformed, 400, 'BadRequest', 'InvalidSas')).toBe(
      'Invalid key in aeg-sas-token. Valid format :r=UrlEncodedResource&e=UrlEncodedUtcExpiration&s=UrlEncodedSignature.',
    );
  });
});

/**
 * A token as the Event Grid documentation's own generators make it, with the URL encoding each uses:
 * .NET's `HttpUtility.UrlEncode` (C#) and Python's `quote_plus` both write a space as `+`; .NET writes
 * lower-case hex.
 */
function documentedToken(resource: string, expiry: string, encode: (text: string) => string) {
  const unsigned = `r=${encode(resource)}&e=${encode(expiry)}`;
  const signature = createHmac('sha256', Buffer.from(context.secrets.eventGridKey, 'base64'))
    .update(unsigned)
    .digest('base64');
  return `${unsigned}&s=${encode(signature)}`;
}
const quotePlus = (text: string) => encodeURIComponent(text).replace(/%20/g, '+');
const httpUtilityUrlEncode = (text: string) =>
  quotePlus(text).replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase());

describe('the other ways Event Grid documents to present a key or a signature', () => {
  const inAnHour = () => new Date(context.clock.now() + 3_600_000);

  it('the access key as the aeg-sas-key query parameter', async () => {
    const query = `aeg-sas-key=${encodeURIComponent(context.secrets.eventGridKey)}`;
    const response = await fetch(`${endpoint}?api-version=2018-01-01&${query}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([validEvent('q-1')]),
    });
    expect(response.status).toBe(200);
    await expect.poll(() => receiver.deliveriesOf('q-1').length, { timeout: 60_000 }).toBe(1);
    const wrong = await fetch(
      `${endpoint}?aeg-sas-key=${encodeURIComponent(Buffer.alloc(32, 1).toString('base64'))}`,
      {
        method: 'POST',
        body: JSON.stringify([validEvent('q-2')]),
      },
    );
    expect(await errorOf(wrong, 401, 'Unauthorized', 'Unauthorized')).toBe(
      'The request authorization key is not authorized for 127.0.0.1.',
    );
  });

  it('a signature covers the URL it is sent to and what lies under its resource, within one topic', async () => {
    const key = new AzureKeyCredential(context.secrets.eventGridKey);
    // The topic under the other name of the same host, as a developer may write it.
    const viaLocalhost = endpoint.replace('127.0.0.1', 'localhost');
    const client = new EventGridPublisherClient(
      viaLocalhost,
      'EventGrid',
      new AzureSASCredential(await generateSharedAccessSignature(viaLocalhost, key, inAnHour())),
    );
    await client.send([{ id: 'p-1', eventType: TYPE, subject: 'tasks/p-1', dataVersion: '1.0', data: {} }]);
    await expect.poll(() => receiver.deliveriesOf('p-1').length, { timeout: 60_000 }).toBe(1);
    // "Valid for all resources prefixed with the resource URI": the topic itself (in Azure, its host).
    const topicRoot = endpoint.replace(/\/api\/events$/, '');
    const forRoot = await generateSharedAccessSignature(topicRoot, key, inAnHour());
    expect((await post([validEvent('p-2')], { 'aeg-sas-token': forRoot })).status).toBe(200);
    // Not beyond it: every topic is a host of its own in Azure, so the shared origin covers none.
    const forOrigin = await generateSharedAccessSignature(new URL(endpoint).origin, key, inAnHour());
    expect((await post([validEvent('p-3')], { 'aeg-sas-token': forOrigin })).status).toBe(401);
    const forOtherHost = await generateSharedAccessSignature(viaLocalhost, key, inAnHour());
    expect((await post([validEvent('p-4')], { 'aeg-sas-token': forOtherHost })).status).toBe(401);
  });

  it('a signature in the Authorization header, scheme SharedAccessSignature', async () => {
    const key = new AzureKeyCredential(context.secrets.eventGridKey);
    const token = await generateSharedAccessSignature(endpoint, key, inAnHour());
    const response = await post([validEvent('a-1')], { authorization: `SharedAccessSignature ${token}` });
    expect(response.status).toBe(200);
    await expect.poll(() => receiver.deliveriesOf('a-1').length, { timeout: 60_000 }).toBe(1);
  });

  it("tokens made by the documentation's C# and Python examples (spaces as '+', an ISO expiry)", async () => {
    // C#: expirationUtc.ToString(en-US), e.g. "6/15/2030 6:20:15 PM".
    const expiry = inAnHour();
    const hours = expiry.getUTCHours();
    const dotnet = `${expiry.getUTCMonth() + 1}/${expiry.getUTCDate()}/${expiry.getUTCFullYear()} ${hours % 12 || 12}:${String(expiry.getUTCMinutes()).padStart(2, '0')}:${String(expiry.getUTCSeconds()).padStart(2, '0')} ${hours < 12 ? 'AM' : 'PM'}`;
    const csharp = documentedToken(endpoint, dotnet, httpUtilityUrlEncode);
    expect(csharp).toMatch(/&e=\d+%2f\d+%2f\d{4}\+\d+%3a\d{2}%3a\d{2}\+[AP]M&/);
    expect((await post([validEvent('d-1')], { 'aeg-sas-token': csharp })).status).toBe(200);
    // Python: datetime.utcnow().isoformat(), microseconds and no zone (UTC).
    const python = documentedToken(endpoint, `${expiry.toISOString().slice(0, -1)}123`, quotePlus);
    expect((await post([validEvent('d-2')], { 'aeg-sas-token': python })).status).toBe(200);
    const expired = documentedToken(
      endpoint,
      new Date(context.clock.now() - 60_000).toISOString(),
      quotePlus,
    );
    expect((await post([validEvent('d-3')], { 'aeg-sas-token': expired })).status).toBe(401);
    await expect.poll(() => receiver.deliveriesOf('d-2').length, { timeout: 60_000 }).toBe(1);
    expect(receiver.deliveriesOf('d-3')).toEqual([]);
  });
});

describe('what the topic refuses, with Event Grid status and body', () => {
  it('no key, a wrong key, a key that is not base64', async () => {
    const missing = await post([validEvent('k-1')], {});
    expect(await errorOf(missing, 401, 'Unauthorized', 'Unauthorized')).toBe(
      'Request must contain one of the following authorization signature: aeg-sas-token, aeg-sas-key.',
    );
    const wrong = await post([validEvent('k-2')], { 'aeg-sas-key': Buffer.alloc(32, 1).toString('base64') });
    expect(await errorOf(wrong, 401, 'Unauthorized', 'Unauthorized')).toBe(
      'The request authorization key is not authorized for 127.0.0.1.',
    );
    const garbage = await post([validEvent('k-3')], { 'aeg-sas-key': 'not base64!' });
    expect(await errorOf(garbage, 401, 'Unauthorized', 'Unauthorized')).toBe(
      'The request authorization key is not authorized for 127.0.0.1. This is due to the reason: The input is not a valid Base-64 string as it contains a non-base 64 character, more than two padding characters, or an illegal character among the padding characters. .',
    );
  });

  it('bodies that are not an array of Event Grid events', async () => {
    const cases: [unknown, string][] = [
      ['', 'Unexpected end when reading JSON.'],
      ['{not json', 'Unexpected character encountered while parsing JSON.'],
      [validEvent('b-1'), 'Unexpected token when reading JSON. Expected: StartArray, actual: StartObject.'],
      ['"text"', 'Unexpected token when reading JSON. Expected: StartArray, actual: String.'],
      [
        [],
        "This resource is configured to receive event in 'EventGridEvent' schema. The JSON received does not conform to the expected schema.",
      ],
      [
        [{ ...validEvent('b-2'), specversion: '1.0' }],
        "This resource is configured for 'EventGridEvent' schema. Received unexpected property 'specversion' in JSON which does not conform to the expected schema.",
      ],
      [
        [{ ...validEvent('b-3'), subject: undefined, id: undefined }],
        "This resource is configured for 'EventGridEvent' schema and requires 'subject' property to be set.",
      ],
      [
        [validEvent('b-4'), { ...validEvent('b-5'), eventType: '' }],
        "This resource is configured for 'EventGridEvent' schema and requires 'eventType' property to be set.",
      ],
      [
        [{ ...validEvent('b-6'), eventTime: 'yesterday' }],
        "The event time property 'eventTime' was not a valid date/time.",
      ],
      [
        [{ ...validEvent('b-7'), metadataVersion: '2' }],
        "Property 'metadataVersion' was found to be set to '2', but was expected to either be null or be set to 1.",
      ],
      [
        [{ ...validEvent('b-8'), topic: '/subscriptions/x/topics/other' }],
        "Property 'topic' was found to be set to '/subscriptions/x/topics/other', but was expected to either be null/empty.",
      ],
    ];
    for (const [body, message] of cases) {
      expect(
        await errorOf(await post(body), 400, 'BadRequest', 'InputJsonInvalid'),
        JSON.stringify(body),
      ).toBe(message);
    }
    // Nothing of a refused batch is delivered, not even its valid events.
    const { pending, attempts } = await actionsOf(running).deliveries();
    expect([...pending, ...attempts].filter((d) => d.eventId.startsWith('b-'))).toEqual([]);
  });

  it("the quickstart's curl publish: an eventTime from `date +%Y-%m-%dT%H:%M:%S%z` (offset without a colon)", async () => {
    // curl -X POST -H "aeg-sas-key: $key" -d "$event" $endpoint: -d sends a form content type.
    const response = await post([{ ...validEvent('z-1'), eventTime: '2017-08-10T21:03:07+0000' }], {
      'aeg-sas-key': context.secrets.eventGridKey,
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(response.status).toBe(200);
    await expect.poll(() => receiver.deliveriesOf('z-1').length, { timeout: 60_000 }).toBe(1);
  });

  it('a publisher may name the topic itself, in any case', async () => {
    expect((await post([{ ...validEvent('t-1'), topic: TOPIC_ID.toUpperCase() }])).status).toBe(200);
  });

  it('payloads beyond the size limits get 413', async () => {
    const big = 'x'.repeat(1_100_000);
    const oneEvent = await post([{ ...validEvent('s-1'), data: big }]);
    expect(await errorOf(oneEvent, 413, 'RequestEntityTooLarge', 'PayloadTooLarge', false)).toBe(
      'The maximum size (1049600) has been exceeded.',
    );
    const half = 'x'.repeat(800_000);
    const batch = await post([
      { ...validEvent('s-2'), data: half },
      { ...validEvent('s-3'), data: half },
    ]);
    expect(await errorOf(batch, 413, 'RequestEntityTooLarge', 'PayloadTooLarge', false)).toBe(
      'The maximum size (1536000) has been exceeded.',
    );
  });

  it('unknown topics and other methods', async () => {
    const unknownUrl = endpoint.replace('taskcreatedtopic', 'nosuchtopic');
    const unknown = await post([validEvent('u-1')], undefined, unknownUrl);
    expect(await errorOf(unknown, 404, 'NotFound', 'ResourceNotFound')).toBe(
      `No HTTP resource was found that matches the request URI '${unknownUrl}?api-version=2018-01-01'.`,
    );
    const get = await fetch(endpoint);
    expect(get.headers.get('allow')).toBe('POST, OPTIONS');
    expect(await errorOf(get, 405, 'MethodNotAllowed', 'MethodNotAllowed')).toBe(
      "The requested resource does not support http method 'GET'.",
    );
    await running.health();
  });
});
