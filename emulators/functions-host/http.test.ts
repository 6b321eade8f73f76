/** The host's HTTP side, driven over real HTTP: loading, settings, hooks, routes, methods, bodies, failures, logs. */
import { statSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import { readLog, sendLarge, startCjsHost } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let host: ComponentUnderTest;
let base: string;

beforeAll(async () => {
  host = await startCjsHost(data.dir, logFile);
  base = host.endpoints.baseUrl as string;
});

afterAll(async () => {
  await host?.stop();
  data.remove();
});

const get = (path: string, init?: RequestInit) => fetch(`${base}${path}`, init);

/**
 * Side by side: the file's host takes the tests of this suite one after another (each group
 * describe.sequential), while the grace test below, whose stop waits out 5 s, runs on a host of its own.
 */
describe.concurrent("on the file's host", () => {
  describe.sequential('loading', () => {
    it('loads every file the main glob matches (CommonJS) and serves on 127.0.0.1', async () => {
      expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await get('/api/hello')).status).toBe(200); // src/functions/http.js
      expect((await get('/api/hooked')).status).toBe(200); // src/functions/hooks.js
    });

    it('merges settings over local.settings.json Values, as func does', async () => {
      const body = await (await get('/api/settings')).json();
      expect(body).toEqual({ FROM_LOCAL: 'local', OVERRIDDEN: 'from settings', FROM_SETTINGS: 'settings' });
    });

    it('refuses registrations after start with a clear error', async () => {
      const response = await get('/api/register');
      expect(response.status).toBe(409);
      expect(await response.text()).toBe('A function can only be registered during app startup.');
      expect((await get('/api/late')).status).toBe(404);
    });

    it('runs appStart, preInvocation and postInvocation hooks', async () => {
      const response = await get('/api/hooked');
      expect(await response.text()).toBe('appStart');
      expect(response.headers.get('x-post-hook')).toBe('ran');
    });
  });

  describe.sequential('routing', () => {
    it('matches routes case-insensitively and converts the response through the library', async () => {
      for (const path of ['/api/hello/Ada', '/API/HELLO/Ada', '/Api/hello/Ada/']) {
        const response = await get(path);
        expect(response.status).toBe(200);
        expect(await response.text()).toBe('Hello, Ada');
        expect(response.headers.get('x-greeting')).toBe('yes');
        expect(response.headers.get('set-cookie')).toBe(
          'visited=1; max-age=60; path=/; samesite=lax; httponly',
        );
      }
      expect(await (await get('/api/hello?name=Bob')).text()).toBe('Hello, Bob');
    });

    it("writes response cookies as ASP.NET Core's response cookies do: lower-case attributes in its order, path=/ unless given, the value escaped", async () => {
      const response = await get('/api/cookies');
      expect(response.status).toBe(200);
      expect(response.headers.getSetCookie()).toEqual([
        'fromHeaders=1',
        'plain=x; path=/',
        'token=a%20b%3Dc%2F%C3%A9%3B; expires=Wed, 02 Jan 2030 03:04:05 GMT; max-age=90; domain=example.com; path=/api; secure; samesite=none',
        'strict=; path=/; samesite=strict; httponly',
      ]);
    });

    it('answers 500 (empty) for a cookie ASP.NET Core refuses: a name that is no token, a negative max-age', async () => {
      for (const bad of ['name', 'maxAge']) {
        const response = await get(`/api/cookies?bad=${bad}`);
        expect(response.status, bad).toBe(500);
        expect(response.headers.get('set-cookie')).toBeNull();
        expect(await response.text()).toBe('');
      }
    });

    it('answers 500 (empty) for a response header that is no ASCII, which Kestrel refuses to write', async () => {
      for (const name of ['content-disposition', 'content-type']) {
        const response = await get(`/api/nonAsciiHeader?name=${name}`);
        expect(response.status, name).toBe(500);
        expect(response.headers.get(name)).toBeNull();
        expect(await response.text()).toBe('');
      }
      await waitFor('the reason in the log', () =>
        readLog(logFile).find((e) =>
          e.message.includes('Invalid non-ASCII or control character in header: 0x00E9'),
        ),
      );
    });

    it("applies templates, constraints and catch-alls, trying the routes in the order of the functions' names", async () => {
      const params = async (path: string) => ((await (await get(path)).json()) as { params: unknown }).params;
      expect(await params('/api/products/books/12')).toEqual({ category: 'books', id: '12' });
      expect(await params('/api/products/books')).toEqual({ category: 'books' });
      expect((await get('/api/products/123/1')).status).toBe(404); // alpha
      expect((await get('/api/products/books/x')).status).toBe(404); // int
      expect((await get('/api/products/books/99999999999')).status).toBe(404); // beyond int
      // int is .NET's int.TryParse with NumberStyles.Integer: a sign and white space around pass.
      expect(await params('/api/products/books/+5')).toEqual({ category: 'books', id: '+5' });
      expect(await params('/api/products/books/%205')).toEqual({ category: 'books', id: ' 5' });
      expect((await get('/api/products/books/0x10')).status).toBe(404);
      // No precedence for the literal: 'products' comes before 'productsById' (products/special) by name.
      expect(await params('/api/products/special')).toEqual({ category: 'special' });
      expect(await (await get('/api/files/a/b/c%20d.txt')).text()).toBe('a/b/c d.txt');
      // By name in any case: tieLower's route before tieUpper's.
      expect(await (await get('/api/ties/1')).text()).toBe('ties/{id}');
    });

    it('decodes the path as Kestrel does: %2F and undecodable sequences stay as sent, %00 is refused (400)', async () => {
      const text = async (path: string) => {
        const response = await get(path);
        expect(response.status, path).toBe(200);
        return response.text();
      };
      expect(await text('/api/hello/%C3%A9%20x')).toBe('Hello, é x');
      expect(await text('/api/hello/a%2Fb')).toBe('Hello, a%2Fb');
      // Each sequence on its own: a valid one is decoded next to one that is not UTF-8.
      expect(await text('/api/files/%C3%A9%E0%A4%A')).toBe('é%E0%A4%A');
      expect(await text('/api/files/%C3%41')).toBe('%C3A');
      const nul = await get('/api/hello/a%00b');
      expect(nul.status).toBe(400);
      expect(await nul.text()).toBe('');
    });

    it("gives the function the URL the host builds: the decoded path escaped again as ASP.NET's PathString writes it, the query as sent", async () => {
      const url = await (await get('/api/url/%7e%c3%a9%41/a%2Fb/%2541?x=%7e')).text();
      expect(url).toBe(`${base}/api/url/~%C3%A9A/a%2Fb/%41?x=%7e`);
    });

    it("splits it as ASP.NET's routing does: an empty segment matches no route, a catch-all takes the rest as sent", async () => {
      for (const path of ['/api/hello//Ada', '//api/hello', '/api//hello', '//', '/api/files//a']) {
        const response = await get(path);
        expect(response.status, path).toBe(404);
        expect(await response.text()).toBe('');
      }
      expect(await (await get('/api/files/a%2Fb//c%20d/')).text()).toBe('a%2Fb//c d/');
      expect(await (await get('/api/files/')).text()).toBe('');
    });

    it('answers 404 (empty) for unknown routes and — like the real host — for a method the function does not accept', async () => {
      for (const [method, path] of [
        ['GET', '/api/nope'],
        ['GET', '/nope'],
        ['GET', '/api/post-only'],
        ['PUT', '/api/hello'],
        ['HEAD', '/api/hello'],
      ]) {
        const response = await get(path as string, { method });
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(await response.text()).toBe('');
      }
      expect((await get('/api/post-only', { method: 'POST' })).status).toBe(201);
    });

    it("answers the home page at / whatever the method, as the runtime's HomepageMiddleware does", async () => {
      for (const method of ['GET', 'POST', 'DELETE']) {
        const response = await get('/?x=1', { method });
        expect(response.status, method).toBe(200);
        expect(await response.text()).toBe('Your Functions 4.0 app is up and running\n');
      }
    });

    it('answers 204 for an explicit 204, and 200 with an empty body when the function returns nothing', async () => {
      expect((await get('/api/noContent')).status).toBe(204);
      const nothing = await get('/api/nothing');
      expect(nothing.status).toBe(200);
      expect(await nothing.text()).toBe('');
    });
  });

  describe.sequential('the query', () => {
    it('reaches the function as the host hands it over: repeated names joined by commas, empty values kept', async () => {
      const query = await (await get('/api/query?a=1&A=2&b=&c=x%20y&d=+z&e&f=&f=')).json();
      expect(query).toEqual({ a: '1,2', b: '', c: 'x y', d: ' z', e: '', f: ',' });
    });
  });

  describe.sequential('request headers', () => {
    it('reach the function as the host hands them over: a header sent on several lines is one value, joined by commas (StringValues), none dropped', async () => {
      // Raw name/value pairs, each a header line of its own (Node sends no Host of its own then).
      const lines = ['host', new URL(base).host, 'x-repeated', '1', 'x-repeated', '2, 3', 'x-empty', ''];
      // Node's own parser keeps only the first of a repeated user-agent; Kestrel keeps every line.
      lines.push('user-agent', 'first', 'user-agent', 'second');
      const answer = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
        const req = request(`${base}/api/requestHeaders`, { headers: lines }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({
        'x-repeated': '1,2, 3',
        'user-agent': 'first,second',
        'x-empty': '',
      });
    });
  });

  describe.sequential('request bodies', () => {
    it('passes binary bodies and multipart uploads through', async () => {
      const bytes = new Uint8Array(1024 * 1024).fill(7);
      const echo = await (
        await get('/api/echo', {
          method: 'POST',
          body: bytes,
          headers: { 'content-type': 'application/octet-stream' },
        })
      ).json();
      expect(echo).toEqual({ bytes: bytes.length, contentType: 'application/octet-stream' });
      const form = new FormData();
      form.set('taskId', 't1');
      form.set('file', new Blob(['hello file']), 'notes.txt');
      expect(await (await get('/api/upload', { method: 'POST', body: form })).text()).toBe(
        'File uploaded: t1/notes.txt (10 bytes)',
      );
    });

    it('hands the function a body only with a Content-Length, as the host does: a chunked one is left unread (the function gets none)', async () => {
      const echo = (framing: Record<string, string>) =>
        new Promise<{ status?: number; body: string }>((resolve, reject) => {
          const headers = { 'content-type': 'text/plain', ...framing };
          const req = request(`${base}/api/echo`, { method: 'POST', headers }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
          });
          req.on('error', reject);
          req.end('hello');
        });
      expect(await echo({ 'content-length': '5' })).toEqual({
        status: 200,
        body: '{"bytes":5,"contentType":"text/plain"}',
      });
      expect(await echo({ 'transfer-encoding': 'chunked' })).toEqual({
        status: 200,
        body: '{"bytes":0,"contentType":"text/plain"}',
      });
    });

    it('answers 413 beyond 100 MB without reading the body', async () => {
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          `${base}/api/echo`,
          { method: 'POST', headers: { 'content-length': 100 * 1024 * 1024 + 1 } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.write(Buffer.alloc(1024));
      });
      expect(status).toBe(413);
    });
  });

  describe.sequential('request size (local.settings.json Host.MaxRequestBodySize: 2 MiB)', () => {
    const LIMIT = 2 * 1024 * 1024;
    const TOTAL = 64 * 1024 * 1024;
    const refused = { status: 413, body: `Request too large: the limit is ${LIMIT} bytes.` };
    // The host reads at most the limit + 1 byte; the rest is what sockets buffer on the way.
    const MAX_SENT = 24 * 1024 * 1024;

    it('lets the function refuse a body over the limit while it streams, with a declared Content-Length', async () => {
      const result = await sendLarge(`${base}/api/limited`, TOTAL, true);
      expect(result).toMatchObject(refused);
      expect(result.sent).toBeLessThan(MAX_SENT);
    });

    it('has nothing to cut in a chunked body (no Content-Length): it never reaches the function, as in Azure', async () => {
      const result = await sendLarge(`${base}/api/limited`, TOTAL, false);
      expect(result).toMatchObject({ status: 200, body: '{"bytes":0}' });
    });

    it('survives a client that leaves in the middle of its body', async () => {
      await new Promise<void>((resolve) => {
        const req = request(`${base}/api/limited`, { method: 'POST', headers: { 'content-length': 1000 } });
        req.on('error', () => resolve());
        req.write(Buffer.alloc(500), () => req.destroy());
        req.on('close', () => resolve());
      });
      await waitFor('the abort in the log', () =>
        readLog(logFile).find((e) =>
          e.message.startsWith('request POST /api/limited failed: Error: aborted'),
        ),
      );
      expect((await get('/api/limited', { method: 'POST', body: 'ok' })).status).toBe(200);
    });

    it('stays bounded under concurrent oversized uploads, then serves bodies up to the limit whole', async () => {
      const results = await Promise.all(
        Array.from({ length: 8 }, () => sendLarge(`${base}/api/limited`, TOTAL, true)),
      );
      for (const result of results) {
        expect(result).toMatchObject(refused);
        expect(result.sent).toBeLessThan(MAX_SENT);
      }
      for (const size of [LIMIT - 1, LIMIT]) {
        const response = await get('/api/limited', { method: 'POST', body: Buffer.alloc(size, 'y') });
        expect(await response.json()).toEqual({ bytes: size });
      }
    });
  });

  describe.sequential('failures and logs', () => {
    it('answers 500 with no stack trace when a function throws; the trace goes to the log; the host keeps serving', async () => {
      const response = await get('/api/fail');
      expect(response.status).toBe(500);
      expect(await response.text()).toBe('');
      const failed = await waitFor('the failure in the log', () =>
        readLog(logFile).find(
          (entry) =>
            entry.function === 'fail' && entry.message.startsWith("Executed 'Functions.fail' (Failed"),
        ),
      );
      const trace = readLog(logFile).find(
        (entry) => entry.invocationId === failed.invocationId && entry.message.includes('boom'),
      );
      expect(trace?.message).toMatch(/Exception: boom: internal detail[\s\S]*at /);
      expect(
        readLog(logFile).some(
          (e) =>
            e.invocationId === failed.invocationId && e.level === 'error' && e.message === 'about to fail',
        ),
      ).toBe(true);
      expect((await get('/api/hello')).status).toBe(200);
    });

    it('logs a thrown value that is no Error as the Node worker reports it: its JSON, with a stack', async () => {
      const exceptions = () =>
        readLog(logFile).filter(
          (entry) =>
            entry.function === 'failWithValue' &&
            entry.message.startsWith('Exception while executing function'),
        );
      const exception = async (value: unknown) => {
        const before = exceptions().length;
        const response = await get(`/api/failWithValue?value=${encodeURIComponent(JSON.stringify(value))}`);
        expect(response.status).toBe(500);
        const line = await waitFor('the exception in the log', () => exceptions()[before]);
        return line.message.split('\n').slice(0, 3);
      };
      const [, object, objectStack] = await exception({ code: 42 });
      expect(object).toBe('Exception: {"code":42}');
      expect(objectStack).toBe('Stack: Error: {"code":42}');
      expect((await exception('plain text')).slice(1)).toEqual([
        'Exception: plain text',
        'Stack: Error: plain text',
      ]);
      expect((await exception(7))[1]).toBe('Exception: 7');
    });

    it('cancels a function past functionTimeout (host.json: 2 s), answers 500 and keeps serving', async () => {
      const started = Date.now();
      const response = await get('/api/slow');
      expect(response.status).toBe(500);
      expect(Date.now() - started).toBeLessThan(3900);
      await waitFor('the timeout line', () =>
        readLog(logFile).find(
          (e) =>
            e.function === 'slow' &&
            /^Timeout value of 00:00:02 exceeded by function 'Functions.slow'/.test(e.message),
        ),
      );
      expect((await get('/api/hello')).status).toBe(200);
    });

    it("writes each invocation's lines and the host's Executing/Executed lines to the console and the JSON-lines file", async () => {
      await get('/api/hello/Grace');
      const line = await waitFor('the user log line', () =>
        readLog(logFile).find((e) => e.message === 'hello Grace'),
      );
      expect(line).toMatchObject({ function: 'hello', level: 'information' });
      expect(Date.parse(line.time)).not.toBeNaN();
      const lines = readLog(logFile).filter((e) => e.invocationId === line.invocationId);
      expect(lines.map((e) => e.message)).toEqual([
        expect.stringMatching(
          /^Executing 'Functions\.hello' \(Reason='This function was programmatically called via the host APIs\.', Id=[0-9a-f-]{36}\)$/,
        ),
        'hello Grace',
        expect.stringMatching(
          /^Executed 'Functions\.hello' \(Succeeded, Id=[0-9a-f-]{36}, Duration=\d+ms\)$/,
        ),
      ]);
      expect(lines[0]?.message).toContain(line.invocationId);
      await waitFor('the console line', () => host.output.includes('[hello] hello Grace'));
    });

    it('creates the JSON-lines log owner-only (0600), like every other file in logs/', async () => {
      await get('/api/hello');
      await waitFor('the log file', () => readLog(logFile).length > 0);
      expect(statSync(logFile).mode & 0o777).toBe(0o600);
    });

    it('filters by host.json logging levels (Function.quiet.User: Warning)', async () => {
      await get('/api/quiet');
      await waitFor('the warning', () => readLog(logFile).find((e) => e.message === 'kept by host.json'));
      expect(readLog(logFile).some((e) => e.message === 'suppressed by host.json')).toBe(false);
    });

    it('never crashes on malformed requests', async () => {
      expect((await get('/api/files/%E0%A4%A')).status).toBe(200);
      const raw = await new Promise<number>((resolve, reject) => {
        const req = request(`${base}/api/hello`, { headers: { host: 'not a host' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(raw).toBe(200);
      // An absolute-form target whose authority is no URL: Kestrel's 400, not a failure of the host.
      const statusLine = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(base).port), '127.0.0.1', () =>
          socket.write('GET http://%zz/api/hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
        );
        let text = '';
        socket.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
        });
        socket.on('end', () => resolve(text.split('\r\n')[0] ?? '')).on('error', reject);
      });
      expect(statusLine).toBe('HTTP/1.1 400 Bad Request');
      expect((await get('/api/hello')).status).toBe(200);
    });
  });

  // Last: it stops the file's host.
  describe.sequential('stopping', () => {
    it('answers the requests under way and refuses new connections; an idle kept-alive one does not hold it', async () => {
      // A kept-alive connection, idle by the time of the stop: server.close alone would wait its 120 s out.
      const agent = new Agent({ keepAlive: true });
      const kept = await new Promise<number>((resolve, reject) =>
        request(`${base}/api/hello`, { agent }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
          .on('error', reject)
          .end(),
      );
      expect(kept).toBe(200);
      // The function stays in flight until this server answers its call.
      let release: (() => void) | undefined;
      const releaser = createServer((_req, res) => {
        release = () => res.end();
      });
      await new Promise<void>((resolve) => releaser.listen(0, '127.0.0.1', resolve));
      const releaseUrl = `http://127.0.0.1:${(releaser.address() as AddressInfo).port}/`;
      const underWay = get(`/api/held?release=${encodeURIComponent(releaseUrl)}`);
      const free = await waitFor('the held function to run', () => release);
      const stopped = host.stop();
      // A new connection each time (no agent): once one is refused, the stop is under way. Refused, not
      // reset: one the kernel took just before the host closed its socket is reset at once, and freeing
      // the function then could beat a host that cut it off at the stop (no grace at all).
      const refused = () =>
        new Promise<boolean>((resolve) =>
          request(`${base}/api/hello`, { agent: false }, (res) => {
            res.resume();
            resolve(false);
          })
            .on('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'))
            .end(),
        );
      await waitFor('the host to refuse new connections', refused);
      free();
      const response = await underWay;
      expect(response.status).toBe(200);
      expect(await response.text()).toBe('answered');
      await stopped;
      agent.destroy();
      releaser.close();
    });
  });
});

describe.concurrent('stopping a host of its own', () => {
  it('ends a request still unanswered after the grace (5 s): a client that never sends its body cannot hold the stop', async () => {
    const own = testDataDir();
    const ownHost = await startCjsHost(own.dir, join(own.dir, 'logs', 'functions.jsonl'));
    try {
      // Wrapped: a promise resolved with a promise would wait for it.
      const { ended } = await new Promise<{ ended: Promise<string> }>((held, reject) => {
        const req = request(`${ownHost.endpoints.baseUrl}/api/echo`, {
          method: 'POST',
          // The host answers 100 Continue once it holds the request: then the body is left unfinished.
          headers: { 'content-length': 10, expect: '100-continue' },
        });
        const ended = new Promise<string>((resolve) => {
          req.on('response', (res) => resolve(`answered ${res.statusCode}`));
          req.on('error', (error) => resolve(error.message));
        });
        req.on('continue', () => {
          req.write('12345');
          held({ ended });
        });
        req.on('error', reject);
        req.flushHeaders();
      });
      await ownHost.stop();
      expect(await ended).toBe('socket hang up');
      expect(ownHost.output.join('\n')).not.toContain('did not stop within');
    } finally {
      await ownHost.stop();
      own.remove();
    }
  });
});
