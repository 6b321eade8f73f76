import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../emulators/core/testing.ts';
import { startBackend, startGateway, type TestGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';
const MISSING =
  '{ "statusCode": 401, "message": "Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API." }';
const INVALID =
  '{ "statusCode": 401, "message": "Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription." }';

describe('gateway: routing, subscription keys, forwarding', () => {
  let functions: Awaited<ReturnType<typeof startBackend>>;
  let web: Awaited<ReturnType<typeof startBackend>>;
  let gw: TestGateway;
  let allKey: string;

  beforeAll(async () => {
    functions = await startBackend();
    web = await startBackend((req, res) => {
      if (req.method === 'POST' && !req.body.length) {
        res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
        return res.end('Title is required.');
      }
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'x-backend': 'web' });
      res.end(req.method === 'GET' ? '[]' : req.body);
    });
    gw = await startGateway({ functionApp: functions.url, webApp: web.url });
    allKey = (await gw.keys('task-manager-all-apis')).primaryKey;
  });
  afterAll(async () => {
    await gw?.stop();
    await functions?.close();
    await web?.close();
  });

  it('the All-APIs subscription has the stack subscriptionKey as its primary key', () => {
    expect(allKey).toBe(gw.context.secrets.subscriptionKey);
  });

  it("publishes the spec's two APIs: suffixes, operations and display names from the OpenAPI documents", async () => {
    const apis = (await gw.gateway.actions?.apis?.(undefined)) as {
      displayName: string;
      path: string;
      keyHeader: string;
      keyQuery: string;
      operations: unknown[];
    }[];
    expect(
      apis.map(({ displayName, path, keyHeader, keyQuery, operations }) => ({
        displayName,
        path,
        keyHeader,
        keyQuery,
        operations,
      })),
    ).toEqual([
      {
        displayName: 'TaskManagerFunctionsAPI',
        path: 'functions',
        keyHeader: KEY,
        keyQuery: 'subscription-key',
        operations: [
          {
            name: 'ManageTask',
            displayName: 'ManageTask',
            description: 'Creates a task in the document database.',
            method: 'POST',
            urlTemplate: '/managetask',
          },
        ],
      },
      {
        displayName: 'TaskManagerWebAPI',
        path: 'web',
        keyHeader: KEY,
        keyQuery: 'subscription-key',
        operations: [
          {
            name: 'get-tasks',
            displayName: 'Get Tasks',
            description: 'Retrieves the list of tasks',
            method: 'GET',
            urlTemplate: '/api/tasks',
          },
          {
            name: 'create-task',
            displayName: 'Create Task',
            description: 'Creates a new task',
            method: 'POST',
            urlTemplate: '/api/tasks',
          },
        ],
      },
    ]);
  });

  it('POST /functions/managetask reaches /api/managetask with the function key and returns its answer', async () => {
    const body = JSON.stringify({ Title: 'Write report', Description: 'd', DueDate: '2026-12-01' });
    const response = await fetch(`${gw.url}/functions/managetask`, {
      method: 'POST',
      headers: { [KEY]: allKey, 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(body);
    const seen = functions.seen.at(-1);
    expect(seen?.method).toBe('POST');
    expect(seen?.url).toBe('/api/managetask');
    expect(seen?.headers['x-functions-key']).toBe(gw.context.secrets.functionKey);
  });

  it('the subscription key reaches the backend unchanged, in its header or its query parameter, as APIM passes it unless a policy removes it', async () => {
    const header = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: allKey } });
    await header.body?.cancel();
    expect(web.seen.at(-1)?.headers[KEY.toLowerCase()]).toBe(allKey);
    const query = await fetch(`${gw.url}/web/api/tasks?subscription-key=${allKey}`);
    await query.body?.cancel();
    expect(query.status).toBe(200);
    expect(web.seen.at(-1)?.url).toBe(`/api/tasks?subscription-key=${allKey}`);
  });

  it('GET and POST /web/api/tasks reach /api/tasks on the web app', async () => {
    const get = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: allKey } });
    expect(get.status).toBe(200);
    expect(get.headers.get('x-backend')).toBe('web');
    expect(await get.text()).toBe('[]');
    expect(web.seen.at(-1)).toMatchObject({ method: 'GET', url: '/api/tasks' });
    const post = await fetch(`${gw.url}/web/api/tasks?subscription-key=${allKey}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"title":"a"}',
    });
    expect(post.status).toBe(200);
    expect(await post.text()).toBe('{"title":"a"}');
    expect(web.seen.at(-1)).toMatchObject({ method: 'POST', url: `/api/tasks?subscription-key=${allKey}` });
  });

  it('the query string reaches the backend byte for byte, through rewrite-uri too (copy-unmatched-params)', async () => {
    const query = '?a=1&b=x%20y&c&d=%7E';
    const post = await fetch(`${gw.url}/functions/managetask${query}`, {
      method: 'POST',
      headers: { [KEY]: allKey },
      body: '{}',
    });
    await post.body?.cancel();
    expect(functions.seen.at(-1)?.url).toBe(`/api/managetask${query}`);
    // The web API's rewrite-uri template="/api/tasks" copies the unmatched parameters as they came.
    const get = await fetch(`${gw.url}/web/api/tasks${query}`, { headers: { [KEY]: allKey } });
    await get.body?.cancel();
    expect(web.seen.at(-1)?.url).toBe(`/api/tasks${query}`);
  });

  it('the backend 400 text reaches the caller unchanged', async () => {
    const response = await fetch(`${gw.url}/web/api/tasks`, { method: 'POST', headers: { [KEY]: allKey } });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await response.text()).toBe('Title is required.');
  });

  it("401 with APIM bodies and APIM's challenge (realm: the API's URL; name: its key header): no key, a wrong key, a key of another API", async () => {
    const challenge = (suffix: string) =>
      `AzureApiManagementKey realm="${gw.url}/${suffix}",name="Ocp-Gateway-Subscription-Key",type="header"`;
    const none = await fetch(`${gw.url}/web/api/tasks`);
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toBe('application/json');
    expect(none.headers.get('www-authenticate')).toBe(challenge('web'));
    expect(await none.text()).toBe(MISSING);
    const wrong = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: 'a'.repeat(32) } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe(challenge('web'));
    expect(await wrong.text()).toBe(INVALID);
    const webOnly = (await gw.keys('task-manager-web')).primaryKey;
    const other = await fetch(`${gw.url}/functions/managetask`, {
      method: 'POST',
      headers: { [KEY]: webOnly },
    });
    expect(other.status).toBe(401);
    expect(other.headers.get('www-authenticate')).toBe(challenge('functions'));
    expect(await other.text()).toBe(INVALID);
    const own = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: webOnly } });
    expect(own.status).toBe(200);
    await own.body?.cancel();
  });

  it('primary and secondary keys both work; a product subscription opens its product APIs', async () => {
    const keys = await gw.keys('task-manager-web');
    for (const key of [
      keys.primaryKey,
      keys.secondaryKey,
      (await gw.keys('task-manager-product')).secondaryKey,
    ]) {
      const response = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key } });
      expect(response.status).toBe(200);
      await response.body?.cancel();
    }
  });

  it('a suspended or cancelled subscription stops working at once, and works again when reactivated', async () => {
    const key = (await gw.keys('task-manager-web')).secondaryKey;
    const call = async () => {
      const response = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key } });
      return { status: response.status, body: await response.text() };
    };
    for (const state of ['suspended', 'cancelled']) {
      await gw.gateway.actions?.setSubscriptionState?.({ name: 'task-manager-web', state });
      expect(await call()).toEqual({ status: 401, body: INVALID });
    }
    await gw.gateway.actions?.setSubscriptionState?.({ name: 'task-manager-web', state: 'active' });
    expect((await call()).status).toBe(200);
  });

  it('an unknown API or operation → 404 with APIM body', async () => {
    for (const [method, path] of [
      ['GET', '/nothing/here'],
      ['GET', '/functions/managetask'],
      ['DELETE', '/web/api/tasks'],
      ['GET', '/web/api/tasks/extra'],
    ]) {
      const response = await fetch(`${gw.url}${path}`, { method, headers: { [KEY]: allKey } });
      expect(response.status).toBe(404);
      expect(await response.text()).toBe('{ "statusCode": 404, "message": "Resource not found" }');
    }
  });

  it('a request target that is not a URL → 400 with an APIM-shaped body, sent raw over TLS', async () => {
    const { connect } = await import('node:tls');
    const { port } = new URL(gw.url);
    const raw = (target: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port: Number(port), ca: gw.context.tls.ca }, () =>
          socket.end(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`),
        );
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('end', () => resolve(Buffer.concat(chunks).toString()));
        socket.on('error', reject);
      });
    for (const target of ['http://[::1', 'http://a%zz/x']) {
      const answer = await raw(target);
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
      expect(answer).toMatch(/\r\ncontent-type: application\/json\r\n/);
      expect(answer.split('\r\n\r\n')[1]).toBe(
        '{ "statusCode": 400, "message": "Bad Request - Invalid URL" }',
      );
    }
  });

  it('bodies pass byte-identical both ways (2 MiB of random bytes, streamed)', async () => {
    const body = randomBytes(2 * 1024 * 1024);
    const response = await fetch(`${gw.url}/functions/managetask`, {
      method: 'POST',
      headers: {
        [KEY]: (await gw.keys('task-manager-functions')).primaryKey,
        'content-type': 'application/octet-stream',
      },
      body,
    });
    expect(response.status).toBe(200);
    expect(functions.seen.at(-1)?.body.equals(body)).toBe(true);
    expect(Buffer.from(await response.arrayBuffer()).equals(body)).toBe(true);
  });

  it('hop-by-hop headers are dropped; end-to-end ones are copied', async () => {
    const { request } = await import('node:https');
    await new Promise<void>((resolve, reject) => {
      const req = request(
        `${gw.url}/web/api/tasks`,
        { headers: { [KEY]: allKey, connection: 'keep-alive, x-hop', 'x-hop': '1', 'x-end': '2' } },
        (res) => {
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end();
    });
    const seen = web.seen.at(-1);
    expect(seen?.headers['x-end']).toBe('2');
    expect(seen?.headers['x-hop']).toBeUndefined();
    expect(seen?.headers['x-forwarded-for']).toBe('127.0.0.1');
  });

  it('a caller that leaves mid-body ends the backend call; the gateway serves on', async () => {
    const { request } = await import('node:https');
    const before = web.seen.length;
    const started = gw.logs.length;
    const req = request(`${gw.url}/web/api/tasks`, {
      method: 'POST',
      headers: { [KEY]: allKey, 'content-length': '1000' },
    });
    req.on('error', () => {});
    // The backend sees the request start once the gateway forwards it.
    const forwarded = new Promise((resolve) => web.server.once('request', resolve));
    req.write('{"title":');
    await forwarded;
    req.destroy();
    await waitFor('the gateway to log the aborted call', () =>
      gw.logs.slice(started).find((line) => line.includes('the caller left mid-request')),
    );
    expect(web.seen.length).toBe(before);
    const after = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: allKey } });
    expect(after.status).toBe(200);
    await after.body?.cancel();
  });

  it('the trace names the API, operation and each policy applied: in the log and on request', async () => {
    const response = await fetch(`${gw.url}/functions/managetask`, {
      method: 'POST',
      headers: { [KEY]: allKey, 'Ocp-Apim-Trace': 'true' },
      body: '{}',
    });
    await response.body?.cancel();
    const location = response.headers.get('ocp-apim-trace-location');
    expect(location).toMatch(new RegExp(`^${gw.url}/trace/`));
    const trace = (await (await fetch(location as string)).json()) as {
      entries: { source: string; message: string }[];
    };
    const sources = trace.entries.map((entry) => entry.source);
    expect(sources).toEqual([
      'routing',
      'subscription',
      'inbound rate-limit',
      'inbound set-header',
      'forward-request',
    ]);
    expect(trace.entries[0]?.message).toBe('API TaskManagerFunctionsAPI, operation ManageTask (ManageTask)');
    expect(trace.entries[4]?.message).toMatch(
      /^POST http:\/\/127\.0\.0\.1:\d+\/api\/managetask → 200 in \d+ ms$/,
    );
    const line = await waitFor('the request in the log', () =>
      gw.logs.find((l) => l.includes(trace.entries[4]?.message ?? '?')),
    );
    expect(line).toMatch(
      /^POST \/functions\/managetask → 200 in \d+ ms \| routing: .* \| inbound rate-limit: .* \| inbound set-header: x-functions-key: override/,
    );
    // Keys never reach the log.
    expect(gw.logs.join('\n')).not.toContain(gw.context.secrets.functionKey);
    expect(gw.logs.join('\n')).not.toContain(allKey);
  });

  it("the trace hides the backend call's query values (a function key may travel as code)", async () => {
    const response = await fetch(`${gw.url}/web/api/tasks?code=s3cret&filter=a%20b&code=again`, {
      headers: { [KEY]: allKey, 'Ocp-Apim-Trace': 'true' },
    });
    expect(await response.text()).toBe('[]');
    const trace = (await (await fetch(response.headers.get('ocp-apim-trace-location') as string)).json()) as {
      entries: { source: string; message: string }[];
    };
    expect(trace.entries.find((entry) => entry.source === 'forward-request')?.message).toMatch(
      /^GET http:\/\/127\.0\.0\.1:\d+\/api\/tasks\?code=\*\*\*&filter=\*\*\* → 200 in \d+ ms$/,
    );
    const line = await waitFor('the request in the log', () =>
      gw.logs.find((l) => l.startsWith('GET /web/api/tasks → 200')),
    );
    expect(line).not.toMatch(/s3cret|again/);
  });
});

describe('gateway: percent-encoded paths', () => {
  it('an escaped unreserved character is that character (RFC 3986 normalization, as APIM on .NET reads the URL): matched and forwarded decoded', async () => {
    const backend = await startBackend();
    const gw = await startGateway({ functionApp: backend.url, webApp: backend.url });
    try {
      const key = (await gw.keys('task-manager-all-apis')).primaryKey;
      const response = await fetch(`${gw.url}/%66unctions/%6Danage%74ask`, {
        method: 'POST',
        headers: { [KEY]: key, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(response.status).toBe(200);
      expect(backend.seen.at(-1)?.url).toBe('/api/managetask');
      expect((await fetch(`${gw.url}/web/api/%74asks`, { headers: { [KEY]: key } })).status).toBe(200);
    } finally {
      await gw.stop();
      await backend.close();
    }
  });
});

describe('gateway: Expect: 100-continue', () => {
  it('100 Continue comes only once the body is read (as .NET servers send it): a refusal is answered at once, on a connection then closed', async () => {
    const { request } = await import('node:https');
    const backend = await startBackend();
    const gw = await startGateway({ functionApp: backend.url, webApp: backend.url });
    const body = JSON.stringify({ Title: 'Upload' });
    /** The interim and final statuses the client sees; it sends the body only on 100 Continue. */
    const post = (headers: Record<string, string>) =>
      new Promise<{ statuses: number[]; connection?: string }>((resolve, reject) => {
        const statuses: number[] = [];
        const call = request(`${gw.url}/functions/managetask`, {
          method: 'POST',
          agent: false,
          ca: gw.context.tls.ca,
          headers: {
            expect: '100-continue',
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            ...headers,
          },
        });
        call.on('continue', () => {
          statuses.push(100);
          call.end(body);
        });
        call.on('response', (response) => {
          statuses.push(response.statusCode ?? 0);
          response.resume().on('end', () => resolve({ statuses, connection: response.headers.connection }));
        });
        call.on('error', reject);
        call.flushHeaders();
      });
    try {
      const key = (await gw.keys('task-manager-all-apis')).primaryKey;
      expect(await post({})).toEqual({ statuses: [401], connection: 'close' });
      expect(backend.seen).toHaveLength(0);
      const passed = await post({ [KEY]: key });
      expect(passed.statuses).toEqual([100, 200]);
      expect(backend.seen.at(-1)?.body.toString()).toBe(body);
    } finally {
      await gw.stop();
      await backend.close();
    }
  });
});

describe('gateway: traces', () => {
  it('are kept for the requests that ask for one, and only for them', async () => {
    // An unreachable backend: APIM's 500 names the request's id (activityId), which is its trace's id.
    const gw = await startGateway({ functionApp: 'http://127.0.0.1:1', webApp: 'http://127.0.0.1:1' });
    try {
      const key = gw.context.secrets.subscriptionKey;
      const call = async (headers: Record<string, string>) => {
        const response = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key, ...headers } });
        expect(response.status).toBe(500);
        const { activityId } = (await response.json()) as { activityId: string };
        return { activityId, location: response.headers.get('ocp-apim-trace-location') };
      };
      const traced = await call({ 'Ocp-Apim-Trace': 'true' });
      expect(traced.location).toBe(`${gw.url}/trace/${traced.activityId}`);
      const kept = await fetch(traced.location as string);
      expect(kept.status).toBe(200);
      expect(((await kept.json()) as { id: string }).id).toBe(traced.activityId);
      const untraced = await call({});
      expect(untraced.location).toBeNull();
      const absent = await fetch(`${gw.url}/trace/${untraced.activityId}`);
      expect(absent.status).toBe(404);
      expect(await absent.text()).toBe('{"statusCode":404,"message":"Trace not found"}');
    } finally {
      await gw.stop();
    }
  });
});
