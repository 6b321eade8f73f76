import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { editArtifact, startBackend, startGateway, type TestGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';
const sections = (inbound: string, extra = '') =>
  `<policies>\n<inbound>\n<base />\n${inbound}\n</inbound>\n<backend><base /></backend>\n${extra || '<outbound><base /></outbound>'}\n</policies>\n`;

/** Artifacts exercising every policy the interpreter knows, on top of the shipped ones. */
function prepare(dir: string) {
  const policy = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, 'policies', path)), { recursive: true });
    writeFileSync(join(dir, 'policies', path), text);
  };
  // Operation scope over API scope (rewrite-uri) over global scope.
  policy(
    'apis/task-manager-web-api/get-tasks.xml',
    sections(
      `<set-variable name="who" value="@(context.Subscription.Name)" />
<set-header name="x-caller" exists-action="override"><value>@(context.Variables.GetValueOrDefault<string>("who", "nobody"))</value></set-header>
<set-header name="x-drop-me" exists-action="delete" />
<set-query-parameter name="page" exists-action="override"><value>@(context.Request.Headers.GetValueOrDefault("x-page", "1"))</value></set-query-parameter>
<rate-limit-by-key calls="2" renewal-period="10" counter-key="@(context.Request.Headers.GetValueOrDefault(&quot;x-client&quot;, &quot;anon&quot;))" remaining-calls-header-name="x-remaining" total-calls-header-name="x-total" retry-after-header-name="x-retry-in" />`,
      `<outbound><base /><set-header name="x-gateway" exists-action="override"><value>@("apim " + context.Response.StatusCode)</value></set-header></outbound>
<on-error><base /><set-header name="x-error" exists-action="override"><value>on-error ran</value></set-header></on-error>`,
    ),
  );
  policy(
    'apis/task-manager-web-api/get-task.xml',
    sections(
      `<rewrite-uri template="/api/items/{id}?from=gateway" copy-unmatched-params="false" />
<set-backend-service base-url="{{FunctionAppBaseUrl}}/alt" />`,
    ),
  );
  policy(
    'apis/task-manager-web-api/create-task.xml',
    sections('<mock-response status-code="201" content-type="application/json" />'),
  );
  policy(
    'apis/task-manager-functions-api/ManageTask.xml',
    // The same counter-key as get-tasks' rate-limit-by-key: APIM keeps one counter per key value.
    sections(`<rate-limit-by-key calls="100" renewal-period="10" counter-key="@(context.Request.Headers.GetValueOrDefault(&quot;x-client&quot;, &quot;anon&quot;))" />
<return-response>
  <set-status code="418" reason="Teapot" />
  <set-header name="x-made-by" exists-action="override"><value>gateway</value></set-header>
  <set-body>@("called " + context.Operation.Name + " as " + context.Subscription.Id)</set-body>
</return-response>`),
  );
  policy('products/task-manager.xml', sections('<quota calls="1" renewal-period="3600" />'));
  // on-error at the global and API scopes, to see which scopes an error passes through.
  const onError = (name: string, base = '<base />') =>
    `<on-error>${base}<set-header name="${name}" exists-action="override"><value>@("ran for " + context.Response.StatusCode)</value></set-header></on-error>`;
  editArtifact(dir, 'policies/global.xml', (text) =>
    text.replace('<on-error />', onError('x-global-error', '')),
  );
  editArtifact(dir, 'policies/apis/task-manager-web-api.xml', (text) =>
    text.replace(/<on-error>[\s\S]*<\/on-error>/, onError('x-api-error')),
  );
  editArtifact(dir, 'policies/apis/task-manager-web-api.xml', (text) =>
    text.replace(
      '<rewrite-uri template="/api/tasks" />',
      `<rewrite-uri template="/api/tasks" />
    <cors allow-credentials="true">
      <allowed-origins><origin>https://app.example</origin></allowed-origins>
      <allowed-methods preflight-result-max-age="300"><method>GET</method><method>POST</method></allowed-methods>
      <allowed-headers><header>content-type</header></allowed-headers>
    </cors>`,
    ),
  );
  // An operation with a template parameter and a response example, as later OpenAPI documents may add.
  editArtifact(dir, '../../openapi/gateway-web.json', (text) => {
    const document = JSON.parse(text);
    document.paths['/api/tasks/{id}'] = {
      get: { operationId: 'get-task', summary: 'Get Task', responses: { 200: { description: 'ok' } } },
    };
    document.paths['/api/tasks'].post.responses['201'] = {
      description: 'created',
      content: { 'application/json': { example: { id: 'example-id', title: 'Example' } } },
    };
    return JSON.stringify(document);
  });
}

/** A gateway of its own on artifacts edited by `prepare`, one backend behind both APIs; both stopped after `use`. */
async function withGateway(
  prepare: (dir: string) => void,
  use: (gw: TestGateway, backend: Awaited<ReturnType<typeof startBackend>>) => Promise<void>,
) {
  const backend = await startBackend();
  const gw = await startGateway({ functionApp: backend.url, webApp: backend.url, prepare });
  try {
    await use(gw, backend);
  } finally {
    await gw.stop();
    await backend.close();
  }
}

/** Artifacts with `policies` after the web API's rewrite-uri. */
const afterRewrite = (policies: string) => (dir: string) =>
  editArtifact(dir, 'policies/apis/task-manager-web-api.xml', (text) =>
    text.replace(
      '<rewrite-uri template="/api/tasks" />',
      `<rewrite-uri template="/api/tasks" />\n    ${policies}`,
    ),
  );

/** The product scope's policy file (the shipped artifacts have none), with `inbound` after <base />. */
function productPolicy(dir: string, inbound: string) {
  mkdirSync(join(dir, 'policies', 'products'));
  writeFileSync(join(dir, 'policies', 'products', 'task-manager.xml'), sections(inbound));
}

/** A gateway whose product scope has `inbound`, and a GET of the web API's tasks with the product's key. */
async function withProductPolicy(
  inbound: string,
  use: (gw: TestGateway, get: () => Promise<Response>) => Promise<void>,
) {
  await withGateway(
    (dir) => productPolicy(dir, inbound),
    async (gw) => {
      const productKey = (await gw.keys('task-manager-product')).primaryKey;
      await use(gw, () => fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: productKey } }));
    },
  );
}

describe('gateway: the policy interpreter', () => {
  let functions: Awaited<ReturnType<typeof startBackend>>;
  let web: Awaited<ReturnType<typeof startBackend>>;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    functions = await startBackend();
    web = await startBackend();
    gw = await startGateway({ functionApp: functions.url, webApp: web.url, prepare });
    key = (await gw.keys('task-manager-all-apis')).primaryKey;
  });
  afterAll(async () => {
    await gw?.stop();
    await functions?.close();
    await web?.close();
  });

  it('set-variable, set-header (override, delete) and set-query-parameter with expressions, after the API scope rewrite-uri', async () => {
    const response = await fetch(`${gw.url}/web/api/tasks?keep=1`, {
      headers: { [KEY]: key, 'x-page': '3', 'x-drop-me': 'x', 'x-client': 'one' },
    });
    expect(response.status).toBe(200);
    const seen = web.seen.at(-1);
    expect(seen?.url).toBe('/api/tasks?keep=1&page=3');
    // The parameter the policy sets takes its old place; the others keep the caller's encoding.
    const again = await fetch(`${gw.url}/web/api/tasks?b=x%20y&page=9&c&d=%7E&page=8`, {
      headers: { [KEY]: key, 'x-page': 'a b', 'x-client': 'one' },
    });
    await again.body?.cancel();
    expect(web.seen.at(-1)?.url).toBe('/api/tasks?b=x%20y&page=a%20b&c&d=%7E');
    expect(seen?.headers['x-caller']).toBe('Task Manager (All APIs)');
    expect(seen?.headers['x-drop-me']).toBeUndefined();
    expect(response.headers.get('x-gateway')).toBe('apim 200');
    expect(response.headers.get('x-remaining')).toBe('1');
    expect(response.headers.get('x-total')).toBe('2');
  });

  it('rate-limit-by-key counts per key; a refusal runs on-error; retry-after-header-name replaces Retry-After', async () => {
    const call = (client: string) =>
      fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key, 'x-client': client } });
    expect((await call('two')).status).toBe(200);
    expect((await call('two')).status).toBe(200);
    const refused = await call('two');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-error')).toBe('on-error ran');
    expect(refused.headers.get('x-remaining')).toBe('0');
    expect(refused.headers.get('retry-after')).toBeNull();
    expect(await refused.text()).toBe(
      `{ "statusCode": 429, "message": "Rate limit is exceeded. Try again in ${refused.headers.get('x-retry-in')} seconds." }`,
    );
    expect(Number(refused.headers.get('x-retry-in'))).toBeGreaterThan(0);
    expect((await call('three')).status).toBe(200);
  });

  it('a refused subscription key runs on-error as well (APIM: SubscriptionKeyNotFound, SubscriptionKeyInvalid); the 401 is otherwise unchanged', async () => {
    const before = web.seen.length;
    for (const [headers, message] of [
      [{}, 'missing subscription key. Make sure to include subscription key when making requests to an API.'],
      [
        { [KEY]: 'b'.repeat(32) },
        'invalid subscription key. Make sure to provide a valid key for an active subscription.',
      ],
    ] as const) {
      const refused = await fetch(`${gw.url}/web/api/tasks`, { headers });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('x-error')).toBe('on-error ran');
      expect(refused.headers.get('www-authenticate')).toBe(
        `AzureApiManagementKey realm="${gw.url}/web",name="${KEY}",type="header"`,
      );
      expect(await refused.text()).toBe(
        `{ "statusCode": 401, "message": "Access denied due to ${message}" }`,
      );
    }
    expect(web.seen.length).toBe(before);
  });

  it('no operation matched (APIM: OperationNotFound) runs on-error of the scopes known: global and the API, if one matched', async () => {
    const errorHeaders = (response: Response) =>
      Object.fromEntries([...response.headers].filter(([name]) => name.endsWith('-error')));
    for (const [path, expected] of [
      ['/web/api/nothing', { 'x-global-error': 'ran for 404', 'x-api-error': 'ran for 404' }],
      ['/nothing/here', { 'x-global-error': 'ran for 404' }],
    ] as const) {
      const response = await fetch(`${gw.url}${path}`, { headers: { [KEY]: key } });
      expect(response.status).toBe(404);
      expect(errorHeaders(response)).toEqual(expected);
      expect(await response.text()).toBe('{ "statusCode": 404, "message": "Resource not found" }');
    }
  });

  it('rate-limit-by-key keeps one counter per key value, shared by every policy (at any scope) that uses it', async () => {
    const headers = { [KEY]: key, 'x-client': 'shared' };
    // ManageTask's policy (calls="100") counts the first call of "shared" ...
    expect((await fetch(`${gw.url}/functions/managetask`, { method: 'POST', headers })).status).toBe(418);
    // ... so get-tasks' (calls="2") lets one more through, not two.
    expect((await fetch(`${gw.url}/web/api/tasks`, { headers })).status).toBe(200);
    expect((await fetch(`${gw.url}/web/api/tasks`, { headers })).status).toBe(429);
  });

  it('rewrite-uri with a template parameter and copy-unmatched-params="false"; set-backend-service', async () => {
    const response = await fetch(`${gw.url}/web/api/tasks/42?dropped=1`, { headers: { [KEY]: key } });
    expect(response.status).toBe(200);
    expect(functions.seen.at(-1)?.url).toBe('/alt/api/items/42?from=gateway');
  });

  it('mock-response answers with the OpenAPI example, the backend untouched', async () => {
    const before = web.seen.length;
    const response = await fetch(`${gw.url}/web/api/tasks`, {
      method: 'POST',
      headers: { [KEY]: key },
      body: '{}',
    });
    expect(response.status).toBe(201);
    expect(await response.text()).toBe('{"id":"example-id","title":"Example"}');
    expect(web.seen.length).toBe(before);
  });

  it('return-response with status, header and an expression body', async () => {
    const response = await fetch(`${gw.url}/functions/managetask`, {
      method: 'POST',
      headers: { [KEY]: key },
    });
    expect(response.status).toBe(418);
    expect(response.headers.get('x-made-by')).toBe('gateway');
    expect(await response.text()).toBe('called ManageTask as task-manager-all-apis');
  });

  it('a product subscription gets the product scope: quota (403 with APIM body and Retry-After once used up)', async () => {
    const productKey = (await gw.keys('task-manager-product')).primaryKey;
    const call = () => fetch(`${gw.url}/web/api/tasks/7`, { headers: { [KEY]: productKey } });
    expect((await call()).status).toBe(200);
    const refused = await call();
    expect(refused.status).toBe(403);
    const [, hms] =
      /^\{ "statusCode": 403, "message": "Out of call volume quota\. Quota will be replenished in (00:59:\d\d|01:00:00)\." \}$/.exec(
        await refused.text(),
      ) ?? [];
    // APIM's quota answer carries Retry-After too: the seconds the message tells.
    const [h, m, sec] = (hms ?? '').split(':').map(Number);
    expect(refused.headers.get('retry-after')).toBe(String((h ?? 0) * 3600 + (m ?? 0) * 60 + (sec ?? 0)));
    gw.context.clock.advance(3600_000);
    expect((await call()).status).toBe(200);
  });

  it('cors: a preflight is answered at the gateway without a key; allowed origins get the headers', async () => {
    const preflight = await fetch(`${gw.url}/web/api/tasks`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.status).toBe(200);
    expect(
      Object.fromEntries([...preflight.headers].filter(([name]) => name.startsWith('access-control'))),
    ).toEqual({
      'access-control-allow-origin': 'https://app.example',
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': 'GET,POST',
      'access-control-allow-headers': 'content-type',
      'access-control-max-age': '300',
    });
    const other = await fetch(`${gw.url}/web/api/tasks`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(other.status).toBe(200);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const actual = await fetch(`${gw.url}/web/api/tasks`, {
      headers: { [KEY]: key, origin: 'https://app.example', 'x-client': 'cors' },
    });
    expect(actual.status).toBe(200);
    expect(actual.headers.get('access-control-allow-origin')).toBe('https://app.example');
    // terminate-unmatched-request (default true): a GET from another origin ends with an empty 200.
    const before = web.seen.length;
    const foreign = await fetch(`${gw.url}/web/api/tasks`, {
      headers: { [KEY]: key, origin: 'https://evil.example', 'x-client': 'cors-foreign' },
    });
    expect(foreign.status).toBe(200);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    expect(await foreign.text()).toBe('');
    expect(web.seen.length).toBe(before);
  });

  it('cors: an OPTIONS that is no preflight (no Access-Control-Request-Method) is no operation of the API: 404, the backend untouched, key or not', async () => {
    const before = web.seen.length;
    const variants: Record<string, string>[] = [
      {},
      { origin: 'https://app.example' },
      { origin: 'https://app.example', [KEY]: key },
    ];
    for (const headers of variants) {
      const response = await fetch(`${gw.url}/web/api/tasks`, { method: 'OPTIONS', headers });
      expect(response.status).toBe(404);
      expect(await response.text()).toBe('{ "statusCode": 404, "message": "Resource not found" }');
    }
    expect(web.seen.length).toBe(before);
  });
});

describe('gateway: cors before other policies', () => {
  it('a preflight is answered by the cors policy alone, as APIM evaluates only cors on it: policies before it apply to the approved calls only', async () => {
    await withGateway(
      afterRewrite(`<rate-limit-by-key calls="2" renewal-period="60" counter-key="web" />
    <cors terminate-unmatched-request="false"><allowed-origins><origin>https://app.example</origin></allowed-origins></cors>`),
      async (gw, backend) => {
        const origin = 'https://app.example';
        for (let i = 0; i < 2; i++) {
          const preflight = await fetch(`${gw.url}/web/api/tasks`, {
            method: 'OPTIONS',
            headers: { origin, 'access-control-request-method': 'GET' },
          });
          expect(preflight.status).toBe(200);
          expect(preflight.headers.get('access-control-allow-origin')).toBe(origin);
        }
        const key = (await gw.keys('task-manager-all-apis')).primaryKey;
        const get = (from = origin) =>
          fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key, origin: from } });
        expect((await get()).status).toBe(200);
        // terminate-unmatched-request="false": another origin's call goes on, without CORS headers.
        const foreign = await get('https://evil.example');
        expect(foreign.status).toBe(200);
        expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
        expect((await get()).status).toBe(429);
        expect(backend.seen).toHaveLength(2);
      },
    );
  });
});

describe('gateway: a quota of days', () => {
  it("tells a wait of a day or more as .NET's TimeSpan does, days before the time (Quota will be replenished in 5.03:23:11.), as APIM answers", async () => {
    await withProductPolicy('<quota calls="1" renewal-period="604800" />', async (gw, get) => {
      const call = async () => {
        const response = await get();
        return {
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          body: await response.text(),
        };
      };
      const message = (wait: string) =>
        new RegExp(
          `^\\{ "statusCode": 403, "message": "Out of call volume quota\\. Quota will be replenished in ${wait}\\." \\}$`,
        );
      expect((await call()).status).toBe(200);
      // The stack clock is real time plus an offset: a few real milliseconds pass between calls, so the
      // seconds left are checked within a band.
      const refusedWith = async (advanceSeconds: number, leftSeconds: number) => {
        gw.context.clock.advance(advanceSeconds * 1000);
        const refused = await call();
        expect(refused.status).toBe(403);
        expect(Number(refused.retryAfter)).toBeGreaterThan(leftSeconds - 5);
        expect(Number(refused.retryAfter)).toBeLessThanOrEqual(leftSeconds);
        return refused.body;
      };
      // A week's period: 4 days 2:59:24 left, then 3 days 4:48:00, then 12:30:00.
      expect(await refusedWith(248_436, 356_364)).toMatch(message('4\\.02:59:(2[0-4]|1\\d)'));
      expect(await refusedWith(79_884, 276_480)).toMatch(message('3\\.04:(48:00|47:5\\d)'));
      expect(await refusedWith(231_480, 45_000)).toMatch(message('12:(30:00|29:5\\d)'));
    });
  });
});

describe('gateway: rate-limit-by-key with expressions for calls and renewal-period', () => {
  it("evaluates them on each call, as APIM's reference allows; a value that is no whole number (or over 300 s) is a 500", async () => {
    await withGateway(
      afterRewrite(
        `<rate-limit-by-key calls="@(context.Request.Headers.GetValueOrDefault(&quot;x-calls&quot;, &quot;2&quot;))" renewal-period="@(context.Request.Headers.GetValueOrDefault(&quot;x-period&quot;, &quot;60&quot;))" counter-key="@(context.Request.Headers.GetValueOrDefault(&quot;x-client&quot;, &quot;anon&quot;))" />`,
      ),
      async (gw, backend) => {
        const key = (await gw.keys('task-manager-all-apis')).primaryKey;
        const call = (headers: Record<string, string> = {}) =>
          fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key, ...headers } });
        expect((await call()).status).toBe(200);
        expect((await call()).status).toBe(200);
        const limited = await call();
        expect(limited.status).toBe(429);
        expect(limited.headers.get('retry-after')).toBe('60');
        // Another client whose calls say 3: its own counter, three calls.
        const three = { 'x-client': 'b', 'x-calls': '3' };
        expect([(await call(three)).status, (await call(three)).status, (await call(three)).status]).toEqual([
          200, 200, 200,
        ]);
        expect((await call(three)).status).toBe(429);
        const bads: Record<string, string>[] = [
          { 'x-calls': 'many' },
          { 'x-calls': '0' },
          { 'x-period': '301' },
        ];
        for (const bad of bads) {
          const failed = await call({ 'x-client': 'c', ...bad });
          expect(failed.status).toBe(500);
          expect(await failed.text()).toMatch(
            /^\{ "statusCode": 500, "message": "Internal server error", "activityId": "[\w-]+" \}$/,
          );
        }
        expect(backend.seen).toHaveLength(5);
      },
    );
  });
});

describe('gateway: an open product (subscriptionRequired false)', () => {
  it("calls without a key, or with one that opens nothing, run in the open product's context, as APIM documents; a valid key keeps its own", async () => {
    await withGateway(
      (dir) => {
        editArtifact(dir, 'products.json', (text) =>
          text.replace('"subscriptionRequired": true', '"subscriptionRequired": false'),
        );
        productPolicy(
          dir,
          '<set-header name="x-product" exists-action="override"><value>open product</value></set-header>',
        );
      },
      async (gw, backend) => {
        const call = async (headers: Record<string, string>) => {
          const response = await fetch(`${gw.url}/web/api/tasks`, { headers });
          return { status: response.status, product: backend.seen.at(-1)?.headers['x-product'] };
        };
        const product = (await gw.keys('task-manager-product')).primaryKey;
        const all = (await gw.keys('task-manager-all-apis')).primaryKey;
        expect(await call({})).toEqual({ status: 200, product: 'open product' });
        // A key that opens nothing is ignored where an open product takes the call (APIM's rule 2).
        expect(await call({ [KEY]: 'not-a-key' })).toEqual({ status: 200, product: 'open product' });
        expect(await call({ [KEY]: product })).toEqual({ status: 200, product: 'open product' });
        // An All-APIs key runs in the API's context: no product policy.
        expect(await call({ [KEY]: all })).toEqual({ status: 200, product: undefined });
      },
    );
  });
});

describe('gateway: a lifetime quota', () => {
  it('renewal-period="0" never renews, as APIM\'s quota reference says (the period is infinite)', async () => {
    await withProductPolicy('<quota calls="2" renewal-period="0" />', async (gw, call) => {
      expect((await call()).status).toBe(200);
      expect((await call()).status).toBe(200);
      // Ten years on, still used up: no wait to tell, so no Retry-After.
      gw.context.clock.advance(10 * 365 * 86_400_000);
      const refused = await call();
      expect(refused.status).toBe(403);
      expect(refused.headers.get('retry-after')).toBeNull();
      expect(await refused.text()).toBe('{ "statusCode": 403, "message": "Out of call volume quota." }');
    });
  });
});

describe('gateway: backend down or slow', () => {
  it('a kept-alive backend connection closed just as it is reused: a request without a body goes again on a new one', async () => {
    // A backend that closes a connection, unanswered, when a second request arrives on it: what a
    // server's idle timeout does to a request that crosses its FIN.
    const requestsOn = new WeakMap<object, number>();
    let sockets = 0;
    let closed = 0;
    const backend = await startBackend();
    backend.server.prependListener('request', (req) => {
      const count = (requestsOn.get(req.socket) ?? 0) + 1;
      requestsOn.set(req.socket, count);
      if (count === 1) sockets++;
      else {
        closed++;
        req.socket.destroy();
      }
    });
    const gw = await startGateway({ functionApp: backend.url, webApp: backend.url });
    try {
      const key = (await gw.keys('task-manager-all-apis')).primaryKey;
      const get = () => fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key } });
      expect((await get()).status).toBe(200);
      const again = await get();
      expect(again.status).toBe(200);
      expect({ sockets, closed }).toEqual({ sockets: 2, closed: 1 });
      // A body has been read by then: the call is not sent twice, APIM's 500 as for a backend that failed.
      const post = await fetch(`${gw.url}/web/api/tasks`, {
        method: 'POST',
        headers: { [KEY]: key },
        body: '{}',
      });
      expect(post.status).toBe(500);
      expect({ sockets, closed }).toEqual({ sockets: 2, closed: 2 });
    } finally {
      await gw.stop();
      await backend.close();
    }
  });

  it("an idle backend connection is closed by the gateway a second before the backend's Keep-Alive timeout", async () => {
    const backend = await startBackend();
    // Node's server announces it: `Keep-Alive: timeout=2`, then closes at 2 s itself.
    backend.server.keepAliveTimeout = 2000;
    let closedByGateway = 0;
    backend.server.on('connection', (socket) => socket.on('end', () => closedByGateway++));
    const gw = await startGateway({ functionApp: backend.url, webApp: backend.url });
    try {
      const key = (await gw.keys('task-manager-all-apis')).primaryKey;
      expect((await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key } })).status).toBe(200);
      // The gateway's FIN arrives first: no request can cross the backend's own close.
      await vi.waitFor(() => expect(closedByGateway).toBe(1), { timeout: 10_000 });
    } finally {
      await gw.stop();
      await backend.close();
    }
  });

  it("down or slow → APIM's 500, the slow one within the forward-request timeout (APIM has no 504 of its own)", async () => {
    const { createServer } = await import('node:http');
    const { listen, close, LOOPBACK } = await import('../emulators/core/http.ts');
    // Accepts requests and never answers.
    const silent = createServer(() => {});
    const port = await listen(silent, 0);
    const gone = await startBackend();
    await gone.close();
    const gw = await startGateway({
      functionApp: gone.url,
      webApp: `http://${LOOPBACK}:${port}`,
      prepare: (dir) =>
        editArtifact(dir, 'policies/global.xml', (text) =>
          text
            .replace('timeout="30"', 'timeout="1"')
            .replace(
              '<on-error />',
              '<on-error><set-header name="x-reason" exists-action="override"><value>@(context.LastError.Reason + ": " + context.LastError.Message)</value></set-header></on-error>',
            ),
        ),
    });
    try {
      const key = (await gw.keys('task-manager-all-apis')).primaryKey;
      const down = await fetch(`${gw.url}/functions/managetask`, { method: 'POST', headers: { [KEY]: key } });
      expect(down.status).toBe(500);
      expect(down.headers.get('x-reason')).toBe(
        'BackendConnectionFailure: Error occurred while calling backend service.',
      );
      expect(await down.text()).toMatch(
        /^\{ "statusCode": 500, "message": "Internal server error", "activityId": "[0-9a-f-]{36}" \}$/,
      );
      const started = Date.now();
      const logged = gw.logs.length;
      const slow = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key } });
      expect(slow.status).toBe(500);
      expect(slow.headers.get('x-reason')).toBe('Timeout: Request to the backend service timed out');
      expect(await slow.text()).toMatch(
        /^\{ "statusCode": 500, "message": "Internal server error", "activityId": "[0-9a-f-]{36}" \}$/,
      );
      // Bounds only a hang: the timeout is 1 s.
      expect(Date.now() - started).toBeLessThan(15_000);
      // The trace tells the two apart too.
      expect(gw.logs.slice(logged).join('\n')).toContain('Timeout: no answer within 1 s');
      expect(gw.logs.join('\n')).toContain('BackendConnectionFailure: ');
    } finally {
      await gw.stop();
      silent.closeAllConnections();
      await close(silent);
    }
  });
});
