/**
 * CloudEvents 1.0: a topic whose input schema is CloudEventSchemaV1_0 takes structured JSON (one event
 * or a batch), and webhook subscriptions with that delivery schema get each event as a CloudEvent after
 * the CloudEvents abuse-protection handshake. The spec's own topic stays on the Event Grid schema; these
 * tests add a topic and subscriptions of their own to the topology.
 */
import { AzureKeyCredential, EventGridPublisherClient } from '@azure/eventgrid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorContext, RunningEmulator } from '../core/emulator.ts';
import { startEmulator, testContext, testDataDir } from '../core/testing.ts';
import { topologySchema } from '../core/topology.ts';
import eventgrid from './index.ts';
import { actionsOf, errorMessage, startReceiver } from './testing.ts';

const TOPIC_ID =
  '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/taskstack/providers/microsoft.eventgrid/topics/taskcreatedtopic';
const CREATED = 'Taskstack.Test.Created';
const REFUSED = 'Taskstack.Test.Refused';

const data = testDataDir();
let context: EmulatorContext;
let running: RunningEmulator;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let cloudTopic: string;
let gridTopic: string;

/** The topology with a CloudEvents topic and webhook subscriptions pointing at the test's receiver. */
function withCloudTopic(base: unknown, webhook: string) {
  const topology = base as { eventGrid: { topics: { name: string; subscriptions: unknown[] }[] } };
  const [taskCreated] = topology.eventGrid.topics;
  return topologySchema.parse({
    ...topology,
    eventGrid: {
      topics: [
        {
          ...taskCreated,
          subscriptions: [
            ...(taskCreated?.subscriptions ?? []),
            {
              name: 'gridascloud',
              endpointType: 'WebHook',
              endpointUrl: `${webhook}/grid-as-cloud`,
              eventTypes: [],
              eventDeliverySchema: 'CloudEventSchemaV1_0',
            },
          ],
        },
        {
          name: 'cloudtopic',
          inputSchema: 'CloudEventSchemaV1_0',
          subscriptions: [
            {
              name: 'cloudsub',
              endpointType: 'WebHook',
              endpointUrl: `${webhook}/cloud`,
              eventTypes: [CREATED],
            },
            {
              name: 'refusingsub',
              endpointType: 'WebHook',
              endpointUrl: `${webhook}/refusing`,
              eventTypes: [REFUSED],
            },
          ],
        },
      ],
    },
  });
}

beforeAll(async () => {
  context = await testContext(data.dir, { inMemory: true });
  receiver = await startReceiver();
  context.topology = withCloudTopic(context.topology, receiver.baseUrl);
  running = await startEmulator(eventgrid, { port: 0, functionsBaseUrl: receiver.baseUrl }, context);
  cloudTopic = running.endpoints.cloudtopic as string;
  gridTopic = running.endpoints.taskcreatedtopic as string;
});
afterAll(async () => {
  await running?.stop();
  await receiver?.stop();
  data.remove();
});

const cloudEvent = (id: string, extra: Record<string, unknown> = {}) => ({
  specversion: '1.0',
  id,
  source: '/taskstack/tests',
  type: CREATED,
  time: '2030-01-01T00:00:00Z',
  subject: `tasks/${id}`,
  datacontenttype: 'application/json',
  data: { id, Title: `Task ${id}` },
  ...extra,
});

function post(body: unknown, contentType: string, url = cloudTopic) {
  return fetch(`${url}?api-version=2018-01-01`, {
    method: 'POST',
    headers: { 'content-type': contentType, 'aeg-sas-key': context.secrets.eventGridKey },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A 400 InputJsonInvalid answer's message, without the report suffix. */
const invalid = (response: Response) => errorMessage(response, 400, 'BadRequest', 'InputJsonInvalid');

describe('a CloudEvents topic', () => {
  it('takes a batch from EventGridPublisherClient in CloudEvent mode; each event reaches the webhook as a CloudEvent after the handshake', async () => {
    const client = new EventGridPublisherClient(
      cloudTopic,
      'CloudEvent',
      new AzureKeyCredential(context.secrets.eventGridKey),
    );
    await client.send([
      {
        id: 'ce-sdk-1',
        type: CREATED,
        source: '/taskstack/tests',
        subject: 'tasks/ce-sdk-1',
        data: { n: 1 },
        extensionAttributes: { tenant: 'contoso' },
      },
      {
        id: 'ce-sdk-2',
        type: CREATED,
        source: '/taskstack/tests',
        data: new Uint8Array([1, 2, 3]),
        datacontenttype: 'application/octet-stream',
      },
    ]);

    await expect.poll(() => receiver.deliveriesOf('ce-sdk-2').length, { timeout: 60_000 }).toBe(1);
    // Event Grid validated the endpoint first, with the CloudEvents webhook handshake.
    const handshakes = receiver.handshakes.filter((h) => h.url.pathname === '/cloud');
    expect(handshakes).toHaveLength(1);
    expect(handshakes[0]?.headers['webhook-request-origin']).toBe('eventgrid.azure.net');

    const [first] = receiver.deliveriesOf('ce-sdk-1');
    expect(first?.url.pathname).toBe('/cloud');
    expect(first?.headers).toMatchObject({
      'content-type': 'application/cloudevents+json; charset=utf-8',
      'aeg-event-type': 'Notification',
      'aeg-subscription-name': 'CLOUDSUB',
      'aeg-delivery-count': '0',
    });
    expect(first?.body).toEqual({
      specversion: '1.0',
      id: 'ce-sdk-1',
      source: '/taskstack/tests',
      type: CREATED,
      subject: 'tasks/ce-sdk-1',
      time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      datacontenttype: 'application/json',
      data: { n: 1 },
      tenant: 'contoso',
    });
    expect(receiver.deliveriesOf('ce-sdk-2')[0]?.body).toMatchObject({
      id: 'ce-sdk-2',
      datacontenttype: 'application/octet-stream',
      data_base64: Buffer.from([1, 2, 3]).toString('base64'),
    });
  });

  it('takes one event as application/cloudevents+json and delivers it unchanged', async () => {
    const event = cloudEvent('ce-single-1');
    expect((await post(event, 'application/cloudevents+json; charset=utf-8')).status).toBe(200);
    await expect.poll(() => receiver.deliveriesOf('ce-single-1').length, { timeout: 60_000 }).toBe(1);
    expect(receiver.deliveriesOf('ce-single-1')[0]?.body).toEqual(event);
  });

  it('delivers nothing to a webhook that does not allow the origin in the handshake, and says why', async () => {
    receiver.handshakeWith(
      (h): Record<string, string> =>
        h.url.pathname === '/refusing'
          ? {}
          : { 'webhook-allowed-origin': String(h.headers['webhook-request-origin']) },
    );
    expect(
      (await post([cloudEvent('ce-refused-1', { type: REFUSED })], 'application/cloudevents-batch+json'))
        .status,
    ).toBe(200);
    const attempts = async () =>
      (await actionsOf(running).deliveries()).attempts.filter((a) => a.eventId === 'ce-refused-1');
    await expect.poll(async () => (await attempts()).length, { timeout: 60_000 }).toBe(1);
    expect(await attempts()).toEqual([
      expect.objectContaining({
        subscription: 'refusingsub',
        outcome: 'GenericError',
        error:
          'the CloudEvents abuse-protection handshake (OPTIONS) did not allow the origin eventgrid.azure.net',
      }),
    ]);
    expect(receiver.handshakes.filter((h) => h.url.pathname === '/refusing')).toHaveLength(1);
    expect(receiver.deliveriesOf('ce-refused-1')).toEqual([]);
  });

  it('refuses what is not CloudEvents 1.0, with Event Grid status and body', async () => {
    const batch = 'application/cloudevents-batch+json; charset=utf-8';
    const single = 'application/cloudevents+json; charset=utf-8';
    const gridEvent = {
      id: 'g-1',
      subject: 's',
      eventType: CREATED,
      eventTime: '2030-01-01T00:00:00Z',
      data: {},
      dataVersion: '1.0',
    };
    const cases: [unknown, string, string][] = [
      ['', batch, 'Unexpected end when reading JSON.'],
      ['{not json', single, 'Unexpected character encountered while parsing JSON.'],
      [
        cloudEvent('x-1'),
        batch,
        'Unexpected token when reading JSON. Expected: StartArray, actual: StartObject.',
      ],
      [
        [cloudEvent('x-2')],
        single,
        'Unexpected token when reading JSON. Expected: StartObject, actual: StartArray.',
      ],
      [
        [],
        batch,
        "This resource is configured to receive event in 'CloudEventV10' schema. The JSON received does not conform to the expected schema.",
      ],
      [
        [gridEvent],
        'application/json',
        "This resource is configured for 'CloudEventV10' schema and requires 'specversion' property to be set.",
      ],
      [
        [cloudEvent('x-3', { specversion: '0.3' })],
        batch,
        "Property 'specversion' was found to be set to '0.3', but was expected to be set to 1.0.",
      ],
      [
        [cloudEvent('x-4', { source: '' })],
        batch,
        "This resource is configured for 'CloudEventV10' schema and requires 'source' property to be set.",
      ],
      [
        [cloudEvent('x-5', { time: 'yesterday' })],
        batch,
        "The event time property 'time' was not a valid date/time.",
      ],
      [
        [cloudEvent('x-6', { data_base64: 'AQID' })],
        batch,
        "Properties 'data' and 'data_base64' cannot be set at the same time.",
      ],
      [
        [cloudEvent('x-7', { Tenant: 'contoso' })],
        batch,
        "This resource is configured for 'CloudEventV10' schema. Received unexpected property 'Tenant' in JSON which does not conform to the expected schema.",
      ],
    ];
    for (const [body, contentType, message] of cases) {
      expect(await invalid(await post(body, contentType))).toBe(message);
    }
    // None of them was delivered.
    for (const id of ['x-1', 'x-2', 'x-3', 'x-4', 'x-5', 'x-6', 'x-7', 'g-1'])
      expect(receiver.deliveriesOf(id)).toEqual([]);
  });

  it('an Event Grid schema topic refuses CloudEvents with its own text', async () => {
    const response = await post([cloudEvent('x-8')], 'application/cloudevents-batch+json', gridTopic);
    expect(await invalid(response)).toBe(
      "This resource is configured for 'EventGridEvent' schema. Received unexpected property 'specversion' in JSON which does not conform to the expected schema.",
    );
  });
});

describe('Event Grid schema in, CloudEvents out', () => {
  it('delivers an Event Grid event to a CloudEvents subscription converted as Azure maps it', async () => {
    const event = {
      id: 'eg-ce-1',
      subject: 'tasks/eg-ce-1',
      eventType: 'Microsoft.DocumentDB.DocumentCreated',
      eventTime: '2030-01-01T00:00:00Z',
      data: { id: 'eg-ce-1' },
      dataVersion: '1.0',
    };
    expect((await post([event], 'application/json', gridTopic)).status).toBe(200);
    await expect.poll(() => receiver.deliveriesOf('eg-ce-1').length, { timeout: 60_000 }).toBe(2);
    const asCloud = receiver.deliveriesOf('eg-ce-1').find((r) => r.url.pathname === '/grid-as-cloud');
    expect(asCloud?.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
    expect(asCloud?.body).toEqual({
      specversion: '1.0',
      id: 'eg-ce-1',
      source: TOPIC_ID,
      subject: 'tasks/eg-ce-1',
      type: 'Microsoft.DocumentDB.DocumentCreated',
      time: '2030-01-01T00:00:00Z',
      dataschema: '#1.0',
      data: { id: 'eg-ce-1' },
    });
  });
});

describe('the topology', () => {
  it('defaults a topic to the Event Grid schema and refuses CloudEvents in with Event Grid schema out', () => {
    const base = topologySchema.parse(context.topology);
    expect(base.eventGrid.topics.find((t) => t.name === 'taskcreatedtopic')?.inputSchema).toBe(
      'EventGridSchema',
    );
    const mismatch = structuredClone(base);
    const cloud = mismatch.eventGrid.topics.find((t) => t.name === 'cloudtopic');
    const sub = cloud?.subscriptions[0] as Record<string, unknown>;
    sub.eventDeliverySchema = 'EventGridSchema';
    const result = topologySchema.safeParse(mismatch);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe(
      "subscription cloudsub: a topic with input schema CloudEventSchemaV1_0 delivers only CloudEventSchemaV1_0 (Azure's schema compatibility)",
    );
  });
});
