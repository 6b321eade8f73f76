import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editArtifact, startBackend, startGateway, type TestGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';
const CLIENT =
  'counter-key="@(context.Request.Headers.GetValueOrDefault(&quot;x-client&quot;, &quot;anon&quot;))"';
const HOUR = 3_600_000;

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

/**
 * A gateway whose TaskManagerWebAPI runs `policies` after its rewrite-uri (for the product's subscription,
 * the task-manager product runs them, and `outbound` in its outbound section); `call` sends Get Tasks with
 * the subscription's key.
 */
async function gatewayWith(
  policies: string,
  subscription = 'task-manager-all-apis',
  outbound = '',
  answer?: Parameters<typeof startBackend>[0],
) {
  const backend = await startBackend(answer);
  const gw: TestGateway = await startGateway({
    functionApp: backend.url,
    webApp: backend.url,
    prepare: (dir) => {
      if (subscription === 'task-manager-product') {
        mkdirSync(join(dir, 'policies', 'products'));
        const policy = `<policies>\n<inbound>\n${policies}\n</inbound>\n<outbound>\n${outbound}\n</outbound>\n</policies>\n`;
        return writeFileSync(join(dir, 'policies', 'products', 'task-manager.xml'), policy);
      }
      editArtifact(dir, 'policies/apis/task-manager-web-api.xml', (text) =>
        text.replace(
          '<rewrite-uri template="/api/tasks" />',
          `<rewrite-uri template="/api/tasks" />\n${policies}`,
        ),
      );
    },
  });
  stop = async () => {
    await gw.stop();
    await backend.close();
  };
  const key = (await gw.keys(subscription)).primaryKey;
  /** Get Tasks (or, with a body, Create Task: the backend echoes the body); `headers` go too. */
  const call = async (client = 'a', body?: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${gw.url}/web/api/tasks`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { [KEY]: key, 'x-client': client, ...headers },
      body,
    });
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      body: await response.text(),
    };
  };
  /** Moves the stack clock forward to `offset` ms past the next multiple of `period` ms (epoch-aligned). */
  const moveTo = (period: number, offset: number) => {
    const now = gw.context.clock.now();
    gw.context.clock.advance(period - (now % period) + offset);
  };
  const advance = (ms: number) => gw.context.clock.advance(ms);
  return { call, moveTo, advance, backend, logs: gw.logs };
}

const refusal = (wait: string, what: string) =>
  new RegExp(
    `^\\{ "statusCode": 403, "message": "Out of ${what} quota\\. Quota will be replenished in ${wait}\\." \\}$`,
  );

/**
 * A 403 of a used-up quota (`what`: call volume or bandwidth): its text's wait matches `wait`; Retry-After the
 * same within 20 s below `seconds`.
 */
function expectRefused(
  answer: { status: number; retryAfter: string | null; body: string },
  wait: string,
  seconds: number,
  what = 'call volume',
) {
  expect(answer.status).toBe(403);
  expect(answer.body).toMatch(refusal(wait, what));
  expect(Number(answer.retryAfter)).toBeLessThanOrEqual(seconds);
  expect(Number(answer.retryAfter)).toBeGreaterThan(seconds - 20);
}

describe('gateway: quota-by-key', () => {
  it("counts per counter-key value in periods laid from first-period-start (default 0001-01-01T00:00:00Z: on the hour for an hour), 403 with quota's text and Retry-After", async () => {
    const { call, moveTo, backend } = await gatewayWith(
      `<quota-by-key calls="2" renewal-period="3600" ${CLIENT} />`,
    );
    moveTo(HOUR, 10_000);
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(200);
    // The period began on the hour, 10 s before the first call: 59:50 left (a few real ms pass).
    expectRefused(await call(), '00:59:(50|4\\d)', 3590);
    // Another key value has its own counter.
    expect((await call('b')).status).toBe(200);
    // One second into the next hour: a new period (one counted from the first call would last 9 s more).
    moveTo(HOUR, 1_000);
    expect((await call()).status).toBe(200);
    expect(backend.seen).toHaveLength(4);
  });

  it('first-period-start moves the periods: an hour from :30 renews at :30', async () => {
    const { call, moveTo, advance } = await gatewayWith(
      `<quota-by-key calls="1" renewal-period="3600" first-period-start="2024-01-01T00:30:00Z" ${CLIENT} />`,
    );
    // A minute before half past.
    moveTo(HOUR, HOUR / 2 - 60_000);
    expect((await call()).status).toBe(200);
    expectRefused(await call(), '00:0(1:00|0:[45]\\d)', 60);
    // Just past half past: a new period (one counted from the first call would last 59 min more).
    advance(61_000);
    expect((await call()).status).toBe(200);
  });

  it('two policies of the same key value count a request once, as its reference says', async () => {
    const { call } = await gatewayWith(
      `<quota-by-key calls="2" renewal-period="3600" ${CLIENT} />\n<quota-by-key calls="2" renewal-period="3600" ${CLIENT} />`,
    );
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(403);
  });

  it('renewal-period="0" is a lifetime quota: no wait to tell', async () => {
    const { call, moveTo } = await gatewayWith(`<quota-by-key calls="1" renewal-period="0" ${CLIENT} />`);
    expect((await call()).status).toBe(200);
    moveTo(365 * 24 * HOUR, 0);
    expect(await call()).toEqual({
      status: 403,
      retryAfter: null,
      body: '{ "statusCode": 403, "message": "Out of call volume quota." }',
    });
  });
});

describe('gateway: quota-by-key, bandwidth and increment-condition', () => {
  it("bandwidth: counted as quota's, per counter-key value; 403 Out of bandwidth quota once used up", async () => {
    const { call, backend, moveTo } = await gatewayWith(
      `<quota-by-key bandwidth="1" renewal-period="3600" ${CLIENT} />`,
    );
    moveTo(HOUR, 10_000);
    // The backend echoes: each call is 300 bytes up and 300 down. 600, then 1,200 of 1,024 bytes.
    const body = 'x'.repeat(300);
    expect((await call('a', body)).status).toBe(200);
    expect((await call('a', body)).status).toBe(200);
    expectRefused(await call('a', body), '00:59:(50|4\\d)', 3590, 'bandwidth');
    // Another key value has its own kilobyte.
    expect((await call('b', body)).status).toBe(200);
    expect(backend.seen).toHaveLength(3);
  });

  it("two policies of one key value count a request's bytes once", async () => {
    const policy = `<quota-by-key bandwidth="1" renewal-period="3600" ${CLIENT} />`;
    const { call, moveTo } = await gatewayWith(`${policy}\n${policy}`);
    moveTo(HOUR, 10_000);
    const body = 'x'.repeat(300);
    // 600 bytes a call, once: the second call still passes (counted twice, 1,200 bytes would refuse it).
    expect((await call('a', body)).status).toBe(200);
    expect((await call('a', body)).status).toBe(200);
    expect((await call('a', body)).status).toBe(403);
  });

  it('increment-condition: decided at the end of outbound (it sees what outbound set); a call it excludes counts neither as a call nor in bytes', async () => {
    const { call, logs, moveTo } = await gatewayWith(
      `<quota-by-key calls="2" bandwidth="1" renewal-period="3600" increment-condition="@(context.Variables.GetValueOrDefault(&quot;counts&quot;, &quot;true&quot;))" ${CLIENT} />`,
      'task-manager-product',
      '<set-variable name="counts" value="@(context.Request.Headers.GetValueOrDefault(&quot;x-counts&quot;, &quot;true&quot;))" />',
    );
    moveTo(HOUR, 10_000);
    const free = { 'x-counts': 'false' };
    // Uncounted: three calls of 600 bytes each, over both the calls and the kilobyte had they counted.
    for (let i = 0; i < 3; i++) expect((await call('a', 'x'.repeat(300), free)).status).toBe(200);
    expect(logs.join('\n')).toMatch(
      /counted once the answer is known[\s\S]*not counted \(increment-condition false\)/,
    );
    // Counted (the condition True): two calls, then the calls are used up.
    expect((await call('a', 'small', { 'x-counts': 'True' })).status).toBe(200);
    expect((await call('a', 'small')).status).toBe(200);
    expectRefused(await call('a', 'small', free), '00:59:(50|4\\d)', 3590);
  });

  it("increment-condition: the reference's example (StatusCode >= 200 && StatusCode < 400) counts successes only", async () => {
    const { call, moveTo } = await gatewayWith(
      `<quota-by-key calls="2" renewal-period="3600" increment-condition="@(context.Response.StatusCode &gt;= 200 &amp;&amp; context.Response.StatusCode &lt; 400)" ${CLIENT} />`,
      undefined,
      undefined,
      // The backend answers with the status the caller asks for.
      (req, res) => res.writeHead(Number(req.headers['x-status'] ?? 200)).end(),
    );
    moveTo(HOUR, 10_000);
    for (const status of ['404', '500', '400'])
      expect((await call('a', undefined, { 'x-status': status })).status).toBe(Number(status));
    expect((await call('a', undefined, { 'x-status': '204' })).status).toBe(204);
    expect((await call('a', undefined, { 'x-status': '399' })).status).toBe(399);
    expectRefused(await call('a'), '00:59:(50|4\\d)', 3590);
  });

  it('increment-condition: a counted call counts its request bytes, held until the condition decided, and its response bytes', async () => {
    const { call, moveTo } = await gatewayWith(
      `<quota-by-key bandwidth="1" renewal-period="3600" increment-condition="@(context.Request.Headers.GetValueOrDefault(&quot;x-counts&quot;, &quot;true&quot;))" ${CLIENT} />`,
    );
    moveTo(HOUR, 10_000);
    // 600 bytes a call; with its request bytes lost, 300, and the third call would pass.
    const body = 'x'.repeat(300);
    expect((await call('a', body)).status).toBe(200);
    expect((await call('a', body)).status).toBe(200);
    expectRefused(await call('a', body), '00:59:(50|4\\d)', 3590, 'bandwidth');
  });
});

describe('gateway: quota-by-key, increment-count', () => {
  it('a number: each call counts that much; a call passes while the count is under calls', async () => {
    const { call, moveTo } = await gatewayWith(
      `<quota-by-key calls="3" increment-count="2" renewal-period="3600" ${CLIENT} />`,
    );
    moveTo(HOUR, 10_000);
    // 0, then 2 of 3: both pass; at 4 of 3 the next is refused (by ones, three would pass).
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(200);
    expectRefused(await call(), '00:59:(50|4\\d)', 3590);
  });

  it('an expression: evaluated once the answer is known; its value is the count', async () => {
    const { call, moveTo } = await gatewayWith(
      `<quota-by-key calls="3" increment-count="@(context.Request.Headers.GetValueOrDefault(&quot;x-cost&quot;, &quot;1&quot;))" renewal-period="3600" ${CLIENT} />`,
    );
    moveTo(HOUR, 10_000);
    expect((await call('a', undefined, { 'x-cost': '3' })).status).toBe(200);
    expectRefused(await call(), '00:59:(50|4\\d)', 3590);
    // A value that is no positive whole number counts nothing; the answer stands.
    expect((await call('b', undefined, { 'x-cost': 'lots' })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await call('b')).status).toBe(200);
    expect((await call('b')).status).toBe(403);
  });
});

describe('gateway: quota', () => {
  it("lays its periods from the subscription's start (when this data directory first had it), as APIM's reference says, not from the first call", async () => {
    const { call, advance } = await gatewayWith(
      '<quota calls="1" renewal-period="3600" />',
      'task-manager-product',
    );
    // Half an hour after the subscription started, the first call: half an hour of its period is left.
    advance(HOUR / 2);
    expect((await call()).status).toBe(200);
    expectRefused(await call(), '00:(30:00|29:[0-5]\\d)', 1800);
    // Just past the hour: the next period (one counted from the first call would run half an hour more).
    advance(HOUR / 2 + 1_000);
    expect((await call()).status).toBe(200);
  });

  it('bandwidth: kilobytes (1024 bytes) of request and response bodies between caller and gateway; a call passes while any is left, 403 Out of bandwidth quota once used up', async () => {
    const { call, advance, backend, logs } = await gatewayWith(
      '<quota bandwidth="1" renewal-period="3600" />',
      'task-manager-product',
    );
    advance(HOUR / 2);
    // The backend echoes: each call is 300 bytes up and 300 down. 600, then 1,200 of 1,024 bytes.
    const body = 'x'.repeat(300);
    expect((await call('a', body)).status).toBe(200);
    expect((await call('a', body)).status).toBe(200);
    expectRefused(await call('a', body), '00:(30:00|29:[0-5]\\d)', 1800, 'bandwidth');
    expect(backend.seen).toHaveLength(2);
    // The trace tells what was counted.
    expect(logs.join('\n')).toMatch(/a call under 1 KB in 3600 s, passed[\s\S]*over 1 KB in 3600 s, refused/);
    // The next period has the whole kilobyte again.
    advance(HOUR / 2 + 1_000);
    expect((await call('a', body)).status).toBe(200);
  });

  it('calls and bandwidth together: whichever is used up first refuses', async () => {
    const { call } = await gatewayWith(
      '<quota calls="2" bandwidth="1000" renewal-period="3600" />',
      'task-manager-product',
    );
    expect((await call('a', 'small')).status).toBe(200);
    expect((await call('a', 'small')).status).toBe(200);
    expectRefused(await call('a', 'small'), '\\d\\d:\\d\\d:\\d\\d', 3600);
  });
});
