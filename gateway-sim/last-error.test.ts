/**
 * context.LastError in on-error: what failed and where, as APIM's error-handling reference names it for each
 * built-in step and policy the simulator runs; the answers themselves stay byte for byte as they were.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editArtifact, startGateway, type TestGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';
const FIELDS = ['Source', 'Reason', 'Message', 'Scope', 'Section', 'Path', 'PolicyId'];
/** Every LastError property, `|`-separated (null reads as ''): Source|Reason|Message|Scope|Section|Path|PolicyId. */
const ALL = FIELDS.map((field) => `context.LastError.${field}`).join(' + "|" + ');

const policies = (inbound: string, onError = '<base />') =>
  `<policies><inbound><base />${inbound}</inbound><backend><base /></backend><outbound><base /></outbound><on-error>${onError}</on-error></policies>`;

function prepare(dir: string) {
  editArtifact(dir, 'policies/global.xml', (text) =>
    text.replace(
      '<on-error />',
      `<on-error><set-header name="x-last-error" exists-action="override"><value>@(${ALL})</value></set-header></on-error>`,
    ),
  );
  const write = (path: string, text: string) => {
    mkdirSync(join(dir, 'policies', path, '..'), { recursive: true });
    writeFileSync(join(dir, 'policies', path), text);
  };
  write('products/task-manager.xml', policies('<quota calls="1" renewal-period="3600" />'));
  write(
    'apis/task-manager-web-api/get-tasks.xml',
    policies(
      '<rate-limit-by-key id="per-client" calls="1" renewal-period="60" counter-key="@(context.Request.Headers.GetValueOrDefault(&quot;x-client&quot;, &quot;anon&quot;))" />',
    ),
  );
  // return-response in on-error, its status, header and body from LastError.
  write(
    'apis/task-manager-web-api/create-task.xml',
    policies(
      '<validate-jwt id="entra"><openid-config url="https://127.0.0.1:1/.well-known/openid-configuration" /></validate-jwt>',
      `<return-response><set-status code="401" /><set-header name="x-reason" exists-action="override"><value>@(context.LastError.Reason)</value></set-header><set-body>@(context.LastError.Source + ": " + context.LastError.Message + " (" + context.LastError.PolicyId + ")")</set-body></return-response>`,
    ),
  );
  // LastError is null outside on-error: reading it there fails the expression.
  write(
    'apis/task-manager-functions-api/ManageTask.xml',
    policies(
      '<set-header name="x-too-early" exists-action="override"><value>@(context.LastError.Message)</value></set-header>',
    ),
  );
}

describe('gateway: context.LastError in on-error', () => {
  let gw: TestGateway;
  let key: string;
  const lastError = (response: Response) => response.headers.get('x-last-error');

  beforeAll(async () => {
    // No backend answers: a call that passes every policy fails at forward-request.
    gw = await startGateway({ functionApp: 'http://127.0.0.1:1', webApp: 'http://127.0.0.1:1', prepare });
    key = (await gw.keys('task-manager-all-apis')).primaryKey;
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('a missing or refused key: authorization, SubscriptionKeyNotFound / SubscriptionKeyInvalid, the 401s unchanged', async () => {
    for (const [headers, reason, message] of [
      [
        {},
        'SubscriptionKeyNotFound',
        'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.',
      ],
      [
        { [KEY]: 'b'.repeat(32) },
        'SubscriptionKeyInvalid',
        'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.',
      ],
    ] as const) {
      const refused = await fetch(`${gw.url}/web/api/tasks`, { headers });
      expect(refused.status).toBe(401);
      expect(lastError(refused)).toBe(`authorization|${reason}|${message}||||`);
      expect(await refused.text()).toBe(`{ "statusCode": 401, "message": "${message}" }`);
    }
  });

  it('no operation: configuration, OperationNotFound, the 404 unchanged', async () => {
    const response = await fetch(`${gw.url}/nothing/here`, { headers: { [KEY]: key } });
    expect(response.status).toBe(404);
    expect(lastError(response)).toBe(
      'configuration|OperationNotFound|Unable to match incoming request to an operation.||||',
    );
    expect(await response.text()).toBe('{ "statusCode": 404, "message": "Resource not found" }');
  });

  it('the backend unreachable: forward-request, BackendConnectionFailure, at the global scope in backend', async () => {
    const response = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key, 'x-client': 'a' } });
    expect(response.status).toBe(500);
    expect(lastError(response)).toBe(
      'forward-request|BackendConnectionFailure|Error occurred while calling backend service.|global|backend||',
    );
    expect(await response.text()).toMatch(
      /^\{ "statusCode": 500, "message": "Internal server error", "activityId": "[0-9a-f-]{36}" \}$/,
    );
  });

  it('rate-limit-by-key refused: RateLimitExceeded with the 429 message, operation scope, its id', async () => {
    const call = () => fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key, 'x-client': 'b' } });
    await (await call()).text();
    const refused = await call();
    expect(refused.status).toBe(429);
    const message = `Rate limit is exceeded. Try again in ${refused.headers.get('retry-after')} seconds.`;
    expect(lastError(refused)).toBe(
      `rate-limit-by-key|RateLimitExceeded|${message}|operation|inbound||per-client`,
    );
    expect(await refused.text()).toBe(`{ "statusCode": 429, "message": "${message}" }`);
  });

  it('quota used up: QuotaExceeded with the 403 message, product scope', async () => {
    const productKey = (await gw.keys('task-manager-product')).primaryKey;
    const call = (client: string) =>
      fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: productKey, 'x-client': client } });
    await (await call('c')).text();
    const refused = await call('d');
    expect(refused.status).toBe(403);
    const body = await refused.text();
    const message = (JSON.parse(body) as { message: string }).message;
    expect(message).toMatch(/^Out of call volume quota\. Quota will be replenished in \d\d:\d\d:\d\d\.$/);
    expect(lastError(refused)).toBe(`quota|QuotaExceeded|${message}|product|inbound||`);
    expect(body).toBe(`{ "statusCode": 403, "message": "${message}" }`);
  });

  it('validate-jwt without a token: TokenNotPresent, read by return-response in on-error', async () => {
    const response = await fetch(`${gw.url}/web/api/tasks`, {
      method: 'POST',
      headers: { [KEY]: key },
      body: '{}',
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('x-reason')).toBe('TokenNotPresent');
    expect(await response.text()).toBe('validate-jwt: JWT not present. (entra)');
  });

  it('LastError is null before on-error: an expression reading it fails (ExpressionValueEvaluationFailure)', async () => {
    const response = await fetch(`${gw.url}/functions/managetask`, {
      method: 'POST',
      headers: { [KEY]: key },
    });
    expect(response.status).toBe(500);
    expect(lastError(response)).toBe(
      'set-header|ExpressionValueEvaluationFailure|Expression evaluation failed. Object reference not set to an instance of an object.|operation|inbound||',
    );
  });
});
