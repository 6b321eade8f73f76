import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBackend, startGateway, type TestGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';

/** The gateway on the artifacts, both APIs' backend an echo; `call` is POST /functions/managetask. */
function gatewayOnEcho() {
  const started = { backend: undefined as Awaited<ReturnType<typeof startBackend>> | undefined };
  let gw: TestGateway;
  beforeAll(async () => {
    started.backend = await startBackend();
    gw = await startGateway({ functionApp: started.backend.url, webApp: started.backend.url });
  });
  afterAll(async () => {
    await gw?.stop();
    await started.backend?.close();
  });
  const call = async (key: string) => {
    const response = await fetch(`${gw.url}/functions/managetask`, {
      method: 'POST',
      headers: { [KEY]: key },
      body: '{}',
    });
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      contentType: response.headers.get('content-type'),
      body: await response.text(),
    };
  };
  return { call, gw: () => gw, seen: () => started.backend?.seen.length ?? 0 };
}

describe('gateway: rate-limit calls="5" renewal-period="60" on TaskManagerFunctionsAPI', () => {
  const { call, gw: gateway, seen } = gatewayOnEcho();

  it('the 6th call within 60 s → 429 with Retry-After and APIM body; calls pass again once the stack clock is past the window', async () => {
    const key = (await gateway().keys('task-manager-all-apis')).primaryKey;
    for (let i = 0; i < 5; i++) expect((await call(key)).status).toBe(200);
    const refused = await call(key);
    expect(refused.status).toBe(429);
    const seconds = Number(refused.retryAfter);
    expect(seconds).toBeGreaterThanOrEqual(55);
    expect(seconds).toBeLessThanOrEqual(60);
    expect(refused.body).toBe(
      `{ "statusCode": 429, "message": "Rate limit is exceeded. Try again in ${seconds} seconds." }`,
    );
    expect(refused.contentType).toBe('application/json');
    // Counting is per subscription: another subscription still has its 5 calls.
    expect((await call((await gateway().keys('task-manager-functions')).primaryKey)).status).toBe(200);
    gateway().context.clock.advance(30_000);
    expect((await call(key)).status).toBe(429);
    gateway().context.clock.advance(31_000);
    expect((await call(key)).status).toBe(200);
  });

  it('exactly 5 of 50 concurrent calls pass', async () => {
    const key = (await gateway().keys('task-manager-product')).primaryKey;
    const before = seen();
    const results = await Promise.all(Array.from({ length: 50 }, () => call(key)));
    expect(results.filter((result) => result.status === 200)).toHaveLength(5);
    expect(results.filter((result) => result.status === 429)).toHaveLength(45);
    expect(seen() - before).toBe(5);
  });
});

describe('gateway: the rate-limit window is renewal-period="60" seconds to the millisecond', () => {
  // Real time stands still (only Date: the sockets' timers run), so the calls take no time and only the
  // stack clock moves the window: exact whatever the machine's load. Before the gateway starts, and
  // after it stops, so that it only ever reads the still time.
  beforeAll(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
  });
  afterAll(() => {
    vi.useRealTimers();
  });
  const { call, gw: gateway } = gatewayOnEcho();

  it('the 6th call is told Retry-After: 60, is refused until 60 s after the first call, and passes at 60 s', async () => {
    const key = (await gateway().keys('task-manager-all-apis')).primaryKey;
    for (let i = 0; i < 5; i++) expect((await call(key)).status).toBe(200);
    expect(await call(key)).toMatchObject({ status: 429, retryAfter: '60' });
    gateway().context.clock.advance(59_999);
    expect(await call(key)).toMatchObject({ status: 429, retryAfter: '1' });
    gateway().context.clock.advance(1);
    expect(await call(key)).toMatchObject({ status: 200, retryAfter: null });
  });
});
