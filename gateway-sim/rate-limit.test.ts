import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, startGateway, type TestGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';

describe('gateway: rate-limit calls="5" renewal-period="60" on TaskManagerFunctionsAPI', () => {
  let backend: Awaited<ReturnType<typeof startBackend>>;
  let gw: TestGateway;
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

  beforeAll(async () => {
    backend = await startBackend();
    gw = await startGateway({ functionApp: backend.url, webApp: backend.url });
  });
  afterAll(async () => {
    await gw?.stop();
    await backend?.close();
  });

  it('the 6th call within 60 s → 429 with Retry-After and APIM body; calls pass again once the stack clock is past the window', async () => {
    const key = (await gw.keys('task-manager-all-apis')).primaryKey;
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
    expect((await call((await gw.keys('task-manager-functions')).primaryKey)).status).toBe(200);
    gw.context.clock.advance(30_000);
    expect((await call(key)).status).toBe(429);
    gw.context.clock.advance(31_000);
    expect((await call(key)).status).toBe(200);
  });

  it('exactly 5 of 50 concurrent calls pass', async () => {
    const key = (await gw.keys('task-manager-product')).primaryKey;
    const before = backend.seen.length;
    const results = await Promise.all(Array.from({ length: 50 }, () => call(key)));
    expect(results.filter((result) => result.status === 200)).toHaveLength(5);
    expect(results.filter((result) => result.status === 429)).toHaveLength(45);
    expect(backend.seen.length - before).toBe(5);
  });
});
