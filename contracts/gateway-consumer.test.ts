/**
 * Consumer pacts of a gateway client (TaskGatewayClient) for both gateway APIs: create and read flows
 * and the 400, 401, 404 and 429 answers, with the documented texts. The pacts are written to a fresh
 * directory and must equal the committed ones in contracts/pacts/ (refresh those with
 * TASKSTACK_UPDATE_PACTS=1 after a deliberate change, and review the diff).
 */
import { rmSync } from 'node:fs';
import { MatchersV3, PactV4, type Rules } from '@pact-foundation/pact';
import { afterAll, describe, expect, it } from 'vitest';
import { GatewayClient, SUBSCRIPTION_HEADER } from './gateway-client.ts';
import {
  committedPactDrift,
  FUNCTIONS_API,
  freshPactDir,
  GATEWAY_CONSUMER,
  PLACEHOLDER_KEY,
  WEB_API,
} from './pacts.ts';

const { like, regex, uuid, eachLike, nullValue } = MatchersV3;
const written = freshPactDir();
const TEXT = 'text/plain; charset=utf-8';
const JSON_UTF8 = 'application/json; charset=utf-8';
const key = { [SUBSCRIPTION_HEADER]: PLACEHOLDER_KEY };
const jsonRequest = key;
/**
 * A text body compared byte for byte: the builder's body() alone would only check the content type
 * (its default rule for binary bodies), so the rule is replaced by equality.
 */
const exactText = (body: string) => (b: TextResponse) => {
  b.body('text/plain', Buffer.from(body, 'utf8'))
    .headers({ 'Content-Type': TEXT })
    .matchingRules({ body: { path: '$', rules: [MatchersV3.equal(body)] } });
};
interface TextResponse {
  body(contentType: string, body: Buffer): TextResponse;
  headers(headers: Record<string, string>): TextResponse;
  matchingRules(rules: Rules): TextResponse;
}
const NOT_FOUND = 'Resource not found';
const MISSING_KEY =
  'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.';

const functionsPact = new PactV4({
  consumer: GATEWAY_CONSUMER,
  provider: FUNCTIONS_API,
  dir: written,
  logLevel: 'warn',
});
const webPact = new PactV4({ consumer: GATEWAY_CONSUMER, provider: WEB_API, dir: written, logLevel: 'warn' });

describe(`${GATEWAY_CONSUMER} → ${FUNCTIONS_API}`, () => {
  it('creates a task: 200 with a new id and the encrypted Description', () =>
    functionsPact
      .addInteraction()
      .given('a fresh rate-limit window')
      .uponReceiving('a task to create')
      .withRequest('POST', '/functions/managetask', (b) =>
        b
          .headers(jsonRequest)
          .jsonBody({ Title: 'Pay rent', Description: 'by Friday', DueDate: '2030-01-31' }),
      )
      .willRespondWith(200, (b) =>
        b.headers({ 'Content-Type': JSON_UTF8 }).jsonBody({
          id: uuid(),
          Title: 'Pay rent',
          Description: regex(/^[A-Za-z0-9+/]+={0,2}$/, 'q3JhbmRvbWl2MTZieXRlcy4uLg=='),
          DueDate: '2030-01-31',
        }),
      )
      .executeTest(async (server) => {
        const answer = await new GatewayClient(server.url, PLACEHOLDER_KEY).createTask({
          Title: 'Pay rent',
          Description: 'by Friday',
          DueDate: '2030-01-31',
        });
        expect(answer.status).toBe(200);
        expect(answer.body).toMatchObject({ Title: 'Pay rent', DueDate: '2030-01-31' });
      }));

  it('a task without a title: 400 Please provide a title.', () =>
    functionsPact
      .addInteraction()
      .given('a fresh rate-limit window')
      .uponReceiving('a task without a title')
      .withRequest('POST', '/functions/managetask', (b) =>
        b.headers(jsonRequest).jsonBody({ Description: 'no title' }),
      )
      .willRespondWith(400, exactText('Please provide a title.'))
      .executeTest(async (server) => {
        const answer = await new GatewayClient(server.url, PLACEHOLDER_KEY).createTask({
          Description: 'no title',
        });
        expect(answer).toEqual({ status: 400, contentType: TEXT, body: 'Please provide a title.' });
      }));

  it('no subscription key: 401 with API Management’s text', () =>
    functionsPact
      .addInteraction()
      .uponReceiving('a task to create without a subscription key')
      .withRequest('POST', '/functions/managetask', (b) => b.jsonBody({ Title: 'no key' }))
      .willRespondWith(401, (b) => b.jsonBody({ statusCode: 401, message: MISSING_KEY }))
      .executeTest(async (server) => {
        const answer = await new GatewayClient(server.url, undefined).createTask({ Title: 'no key' });
        expect(answer).toMatchObject({ status: 401, body: { statusCode: 401, message: MISSING_KEY } });
      }));

  it('an operation the API does not publish (reading a task): 404 with API Management’s text', () =>
    functionsPact
      .addInteraction()
      .uponReceiving('a read of a task, which the gateway does not publish')
      .withRequest('GET', '/functions/managetask', (b) => b.query({ taskId: 'any' }).headers(key))
      .willRespondWith(404, (b) => b.jsonBody({ statusCode: 404, message: NOT_FOUND }))
      .executeTest(async (server) => {
        const answer = await new GatewayClient(server.url, PLACEHOLDER_KEY).readTask('any');
        expect(answer).toMatchObject({ status: 404, body: { statusCode: 404, message: NOT_FOUND } });
      }));

  it('over the rate limit: 429 saying when to try again', () =>
    functionsPact
      .addInteraction()
      .given('the subscription has made 5 calls in the last 60 seconds')
      .uponReceiving('a sixth task within 60 seconds')
      .withRequest('POST', '/functions/managetask', (b) =>
        b.headers(jsonRequest).jsonBody({ Title: 'sixth' }),
      )
      .willRespondWith(429, (b) =>
        b.headers({ 'Retry-After': regex(/^\d+$/, '60') }).jsonBody({
          statusCode: 429,
          message: regex(
            /^Rate limit is exceeded\. Try again in \d+ seconds\.$/,
            'Rate limit is exceeded. Try again in 60 seconds.',
          ),
        }),
      )
      .executeTest(async (server) => {
        const answer = await new GatewayClient(server.url, PLACEHOLDER_KEY).createTask({ Title: 'sixth' });
        expect(answer.status).toBe(429);
        expect((answer.body as { message: string }).message).toMatch(/Try again in \d+ seconds\./);
      }));
});

describe(`${GATEWAY_CONSUMER} → ${WEB_API}`, () => {
  const webTask = {
    id: uuid(),
    title: like('Water the plants'),
    description: like('both rooms'),
    dueDate: nullValue(),
  };

  it('lists the tasks: 200 with an array of camelCase tasks', () =>
    webPact
      .addInteraction()
      .given('the web app holds a task')
      .uponReceiving('a request for the task list')
      .withRequest('GET', '/web/api/tasks', (b) => b.headers(key))
      .willRespondWith(200, (b) => b.headers({ 'Content-Type': JSON_UTF8 }).jsonBody(eachLike(webTask)))
      .executeTest(async (server) => {
        const answer = await new GatewayClient(server.url, PLACEHOLDER_KEY).listWebTasks();
        expect(answer.status).toBe(200);
        expect((answer.body as unknown[]).length).toBeGreaterThan(0);
      }));

  it('creates a task: 200 with a new GUID id', () =>
    webPact
      .addInteraction()
      .uponReceiving('a web task to create')
      .withRequest('POST', '/web/api/tasks', (b) =>
        b.headers(jsonRequest).jsonBody({ title: 'Water the plants', description: 'both rooms' }),
      )
      .willRespondWith(200, (b) =>
        b.headers({ 'Content-Type': JSON_UTF8 }).jsonBody({
          id: uuid(),
          title: 'Water the plants',
          description: 'both rooms',
          dueDate: null,
        }),
      )
      .executeTest(async (server) => {
        const answer = await new GatewayClient(server.url, PLACEHOLDER_KEY).createWebTask({
          title: 'Water the plants',
          description: 'both rooms',
        });
        expect(answer).toMatchObject({ status: 200, body: { title: 'Water the plants', dueDate: null } });
      }));

  it('a task without a title: 400 Title is required.', () =>
    webPact
      .addInteraction()
      .uponReceiving('a web task without a title')
      .withRequest('POST', '/web/api/tasks', (b) =>
        b.headers(jsonRequest).jsonBody({ description: 'no title' }),
      )
      .willRespondWith(400, exactText('Title is required.'))
      .executeTest(async (server) => {
        const answer = await new GatewayClient(server.url, PLACEHOLDER_KEY).createWebTask({
          description: 'no title',
        });
        expect(answer).toEqual({ status: 400, contentType: TEXT, body: 'Title is required.' });
      }));

  it('no subscription key: 401 with API Management’s text', () =>
    webPact
      .addInteraction()
      .uponReceiving('a request for the task list without a subscription key')
      .withRequest('GET', '/web/api/tasks')
      .willRespondWith(401, (b) => b.jsonBody({ statusCode: 401, message: MISSING_KEY }))
      .executeTest(async (server) => {
        const answer = await new GatewayClient(server.url, undefined).listWebTasks();
        expect(answer).toMatchObject({ status: 401, body: { statusCode: 401, message: MISSING_KEY } });
      }));
});

describe('the committed pact files', () => {
  afterAll(() => rmSync(written, { recursive: true, force: true }));

  it.each([
    FUNCTIONS_API,
    WEB_API,
  ])('%s: contracts/pacts/ holds exactly what the consumer tests wrote', (provider) => {
    expect(committedPactDrift(written, GATEWAY_CONSUMER, provider)).toBeUndefined();
  });
});
