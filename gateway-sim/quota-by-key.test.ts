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

/** A gateway whose TaskManagerWebAPI runs `policies` after its rewrite-uri; `call` sends Get Tasks. */
async function gatewayWith(policies: string) {
  const backend = await startBackend();
  const gw: TestGateway = await startGateway({
    functionApp: backend.url,
    webApp: backend.url,
    prepare: (dir) =>
      editArtifact(dir, 'policies/apis/task-manager-web-api.xml', (text) =>
        text.replace(
          '<rewrite-uri template="/api/tasks" />',
          `<rewrite-uri template="/api/tasks" />\n${policies}`,
        ),
      ),
  });
  stop = async () => {
    await gw.stop();
    await backend.close();
  };
  const key = (await gw.keys('task-manager-all-apis')).primaryKey;
  const call = async (client = 'a') => {
    const response = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key, 'x-client': client } });
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
  return { call, moveTo, advance, backend };
}

const refusal = (wait: string) =>
  new RegExp(
    `^\\{ "statusCode": 403, "message": "Out of call volume quota\\. Quota will be replenished in ${wait}\\." \\}$`,
  );

describe('gateway: quota-by-key', () => {
  it("counts per counter-key value in periods laid from first-period-start (default 0001-01-01T00:00:00Z: on the hour for an hour), 403 with quota's text and Retry-After", async () => {
    const { call, moveTo, backend } = await gatewayWith(
      `<quota-by-key calls="2" renewal-period="3600" ${CLIENT} />`,
    );
    moveTo(HOUR, 10_000);
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(200);
    const refused = await call();
    expect(refused.status).toBe(403);
    // The period began on the hour, 10 s before the first call: 59:50 left (a few real ms pass).
    expect(refused.body).toMatch(refusal('00:59:(50|4\\d)'));
    expect(Number(refused.retryAfter)).toBeGreaterThan(3580);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(3590);
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
    const refused = await call();
    expect(refused.body).toMatch(refusal('00:0(1:00|0:5\\d)'));
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(60);
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
