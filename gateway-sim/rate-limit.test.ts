import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { editArtifact, startBackend, startGateway, type TestGateway } from './testing.ts';

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

describe('gateway: rate-limit-by-key increment-condition and increment-count; the remaining-calls and retry-after variables', () => {
  const client = (prefix: string) =>
    `counter-key="@(&quot;${prefix}&quot; + context.Request.Headers.GetValueOrDefault(&quot;x-client&quot;, &quot;anon&quot;))"`;
  /** Headers showing the variables `left` and `wait` as the policies after the limits read them. */
  const showVariables = ['left', 'wait']
    .map(
      (name) =>
        `<set-header name="x-var-${name}" exists-action="override"><value>@(context.Variables.GetValueOrDefault<string>("${name}", "none"))</value></set-header>`,
    )
    .join('');
  const variables = 'remaining-calls-variable-name="left" retry-after-variable-name="wait"';
  let backend: Awaited<ReturnType<typeof startBackend>>;
  let gw: TestGateway;
  beforeAll(async () => {
    // The backend answers with the status the caller asks for (x-status).
    backend = await startBackend((req, res) => res.writeHead(Number(req.headers['x-status'] ?? 200)).end());
    gw = await startGateway({
      functionApp: backend.url,
      webApp: backend.url,
      prepare: (dir) => {
        const showInOutboundAndOnError = (text: string) =>
          text
            .replace('<outbound>\n    <base />', `<outbound>\n    <base />${showVariables}`)
            .replace('<on-error>\n    <base />', `<on-error>\n    <base />${showVariables}`);
        editArtifact(dir, 'policies/apis/task-manager-functions-api.xml', (text) =>
          showInOutboundAndOnError(
            text.replace('renewal-period="60" />', `renewal-period="60" ${variables} />`),
          ),
        );
        // Every web API call: the reference's example condition, a count the caller names (x-cost).
        editArtifact(dir, 'policies/apis/task-manager-web-api.xml', (text) =>
          showInOutboundAndOnError(
            text.replace(
              '<rewrite-uri template="/api/tasks" />',
              `<rewrite-uri template="/api/tasks" />
    <rate-limit-by-key calls="3" renewal-period="60" increment-condition="@(context.Response.StatusCode == 200)" increment-count="@(context.Request.Headers.GetValueOrDefault(&quot;x-cost&quot;, &quot;1&quot;))" ${client('')} remaining-calls-header-name="x-remaining" ${variables} />`,
            ),
          ),
        );
        // Create Task also counts 2 a call under a counter of its own.
        mkdirSync(join(dir, 'policies/apis/task-manager-web-api'));
        writeFileSync(
          join(dir, 'policies/apis/task-manager-web-api/create-task.xml'),
          `<policies><inbound><base /><rate-limit-by-key calls="3" renewal-period="60" increment-count="2" ${client('post-')} /></inbound><backend><base /></backend><outbound><base /></outbound><on-error><base /></on-error></policies>`,
        );
      },
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await backend?.close();
  });
  const key = async (subscription = 'task-manager-all-apis') => (await gw.keys(subscription)).primaryKey;
  /** Get Tasks (Create Task with `method`) as `client`, with `headers`. */
  const web = async (client: string, headers: Record<string, string> = {}, method = 'GET') => {
    const response = await fetch(`${gw.url}/web/api/tasks`, {
      method,
      headers: { [KEY]: await key(), 'x-client': client, ...headers },
    });
    await response.arrayBuffer();
    return response;
  };
  const retryAfter = (response: Response) => Number(response.headers.get('retry-after'));

  it("increment-condition (the reference's example, StatusCode == 200) is decided once the answer is known: only calls answered 200 count", async () => {
    for (const status of ['404', '500', '201']) {
      const uncounted = await web('cond', { 'x-status': status });
      expect(uncounted.status).toBe(Number(status));
      expect(uncounted.headers.get('x-remaining')).toBe('3');
    }
    // The header goes out with the answer: what is left once the call is counted.
    for (const left of ['2', '1', '0']) expect((await web('cond')).headers.get('x-remaining')).toBe(left);
    const refused = await web('cond');
    expect(refused.status).toBe(429);
    expect(retryAfter(refused)).toBeGreaterThanOrEqual(55);
    expect(retryAfter(refused)).toBeLessThanOrEqual(60);
    expect(refused.headers.get('x-remaining')).toBe('0');
  });

  it('increment-count, an expression: its value once the answer is known is the count; Retry-After waits until enough of the oldest counts have left', async () => {
    expect((await web('cost', { 'x-cost': '1' })).status).toBe(200);
    gw.context.clock.advance(10_000);
    expect((await web('cost', { 'x-cost': '1' })).status).toBe(200);
    gw.context.clock.advance(10_000);
    // 2 of 3 counted: the call passes, and counts 2 (4 of 3).
    expect((await web('cost', { 'x-cost': '2' })).status).toBe(200);
    const refused = await web('cost');
    expect(refused.status).toBe(429);
    // The first call leaving (in 40 s) leaves 3 counted, still the limit; the second's leaving (in 50 s), 2.
    expect(retryAfter(refused)).toBeGreaterThanOrEqual(45);
    expect(retryAfter(refused)).toBeLessThanOrEqual(50);
    // A value that is no positive whole number counts nothing; the answer stands.
    expect((await web('lots', { 'x-cost': 'lots' })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await web('lots')).status).toBe(200);
    expect((await web('lots')).status).toBe(429);
  });

  it('increment-count, a number: each call counts that much at once; a call passes while the count is under calls', async () => {
    expect((await web('pair', {}, 'POST')).status).toBe(200);
    expect((await web('pair', {}, 'POST')).status).toBe(200);
    const refused = await web('pair', {}, 'POST');
    expect(refused.status).toBe(429);
    expect(retryAfter(refused)).toBeGreaterThanOrEqual(55);
  });

  it('remaining-calls-variable-name and retry-after-variable-name: rate-limit and rate-limit-by-key give them to the policies after them, on-error too', async () => {
    const functionsKey = await key('task-manager-functions');
    const manageTask = async () => {
      const response = await fetch(`${gw.url}/functions/managetask`, {
        method: 'POST',
        headers: { [KEY]: functionsKey },
      });
      await response.arrayBuffer();
      return response;
    };
    const shown = (response: Response) => [
      response.status,
      response.headers.get('x-var-left'),
      response.headers.get('x-var-wait'),
    ];
    for (const left of ['4', '3', '2', '1', '0'])
      expect(shown(await manageTask())).toEqual([200, left, 'none']);
    let refused = await manageTask();
    expect(shown(refused)).toEqual([429, '0', refused.headers.get('retry-after')]);
    // rate-limit-by-key: a count that waits for the answer is made after the policies that read the variable.
    expect(shown(await web('vars'))).toEqual([200, '3', 'none']);
    expect(shown(await web('vars', { 'x-cost': '2' }))).toEqual([200, '2', 'none']);
    refused = await web('vars');
    expect(shown(refused)).toEqual([429, '0', refused.headers.get('retry-after')]);
  });
});
