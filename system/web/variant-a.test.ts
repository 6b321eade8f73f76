/**
 * Variant A against the real stack (Event Hubs and the function app): every route and error of the
 * web app, and the end-to-end path Create → one message on taskevents → ProcessTaskEvents' log line.
 */
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { EventHubProducerClient } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppStack, freePort, type LogEntry, startAppStack } from '../functions/test-support.ts';
import { openPage, postForm } from './form-client.ts';
import type { Task } from './src/tasks.ts';
import { getTasks, postJson, startWebApp, TEXTS, type WebApp } from './test-support.ts';

const {
  BAD_FORM_TOKEN,
  JSON_CHARSET,
  JSON_ONLY,
  NOT_AN_OBJECT,
  NOT_FOUND,
  NOT_JSON,
  TITLE_REQUIRED,
  TOO_LARGE,
  TOO_MANY_FIELDS,
  WRONG_TYPE,
} = TEXTS;

const TEXT = 'text/plain; charset=utf-8';
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SESSION_SECRET = 'a session secret that must never be logged';

let env: AppStack;
let web: WebApp;
let hubConnection: string;

beforeAll(async () => {
  env = await startAppStack({
    components: ['identity', 'blob', 'cosmos', 'keyvault', 'eventhubs', 'functions'],
  });
  hubConnection = env.stack.description.connections.StreamHubConnection as string;
  web = await startWebApp({ StreamHubConnection: hubConnection, SessionSecret: SESSION_SECRET });
});
afterAll(async () => {
  await web?.stop();
  await env?.stop();
});

const tasks = async (): Promise<Task[]> => (await getTasks(web.url)).json() as Promise<Task[]>;

/** How many events taskevents holds (both partitions); final once the request that sent them has answered. */
async function eventCount(): Promise<number> {
  const producer = new EventHubProducerClient(hubConnection, 'taskevents');
  try {
    let count = 0;
    for (const id of await producer.getPartitionIds()) {
      const partition = await producer.getPartitionProperties(id);
      if (!partition.isEmpty)
        count += partition.lastEnqueuedSequenceNumber - partition.beginningSequenceNumber + 1;
    }
    return count;
  } finally {
    await producer.close();
  }
}

describe('Index and Create (the form)', () => {
  it('shows the list and the Create form, with a signed HttpOnly SameSite session cookie and security headers', async () => {
    const response = await fetch(`${web.url}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await response.text();
    expect(html).toContain('<form id="create" method="post" action="/tasks">');
    expect(html).toMatch(/<input type="hidden" name="_csrf" value="[0-9a-f]+\.[0-9a-f]+">/);
    const cookies = response.headers.getSetCookie();
    const session = cookies.find((c) => c.startsWith('taskstack.a.session=s%3A'));
    expect(session).toMatch(/; Path=\/; HttpOnly; SameSite=Lax$/);
    expect(cookies.find((c) => c.startsWith('taskstack.a.form='))).toMatch(/; HttpOnly; SameSite=Lax$/);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(response.headers.get('content-security-policy')).toContain("form-action 'self'");
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(response.headers.get('x-powered-by')).toBeNull();
    // A page with a form token is never cached: the headers ASP.NET's antiforgery sets on it.
    expect(response.headers.get('cache-control')).toBe('no-cache, no-store');
    expect(response.headers.get('pragma')).toBe('no-cache');
  });

  it('Create adds the task, redirects to Index, sends exactly one message, and ProcessTaskEvents logs it', async () => {
    const page = await openPage(web.url);
    const before = await eventCount();
    const response = await postForm(
      web.url,
      '/tasks',
      { _csrf: page.token, title: 'Water the plants', description: 'the ferns too', dueDate: '2026-12-01' },
      page.cookie,
    );
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/');

    const task = (await tasks()).find((t) => t.title === 'Water the plants') as Task;
    expect(task).toEqual({
      id: expect.stringMatching(GUID),
      title: 'Water the plants',
      description: 'the ferns too',
      dueDate: '2026-12-01',
    });
    const index = await (await fetch(`${web.url}/`, { headers: { cookie: page.cookie } })).text();
    expect(index).toContain(
      '<td class="title">Water the plants</td><td class="description">the ferns too</td><td class="due-date">2026-12-01</td>',
    );

    // The send was awaited before the redirect: the hub's count is final.
    expect(await eventCount()).toBe(before + 1);
    // The function app owns the hub's only consumer group: its log shows what arrived (hub.test.ts
    // reads the bytes themselves).
    const json = JSON.stringify(task);
    const logged = (entry: LogEntry) =>
      entry.function === 'ProcessTaskEvents' && entry.message === `ProcessTaskEvents: message: ${json}`;
    await env.waitForLog(logged);
    expect(env.logs().filter(logged)).toHaveLength(1);
  });

  it('a missing title re-shows the form with the message and what was typed; nothing is stored or sent', async () => {
    const page = await openPage(web.url);
    const [count, listed] = [await eventCount(), (await tasks()).length];
    for (const title of ['', '   ']) {
      const response = await postForm(
        web.url,
        '/tasks',
        { _csrf: page.token, title, description: 'kept <b>as typed</b>', dueDate: '2026-12-24' },
        page.cookie,
      );
      expect(response.status).toBe(400);
      expect(response.headers.get('cache-control')).toBe('no-cache, no-store');
      const html = await response.text();
      expect(html).toContain(`<p class="message" id="message" role="alert">${TITLE_REQUIRED}</p>`);
      expect(html).toContain(
        '<textarea id="description" name="description">kept &lt;b&gt;as typed&lt;/b&gt;</textarea>',
      );
      expect(html).toContain('value="2026-12-24"');
    }
    expect((await tasks()).length).toBe(listed);
    expect(await eventCount()).toBe(count);
  });

  it('an empty description or due date is stored as null, as ASP.NET binds empty form fields', async () => {
    const page = await openPage(web.url);
    await postForm(
      web.url,
      '/tasks',
      { _csrf: page.token, title: 'Bare', description: '', dueDate: '' },
      page.cookie,
    );
    expect((await tasks()).find((t) => t.title === 'Bare')).toMatchObject({
      description: null,
      dueDate: null,
    });
  });

  it("a form may have 1024 fields (ASP.NET's ValueCountLimit); one more is 400 with its text, nothing stored", async () => {
    const page = await openPage(web.url);
    const fields = (count: number, title: string) => ({
      _csrf: page.token,
      title,
      ...Object.fromEntries(Array.from({ length: count - 2 }, (_, i) => [`extra${i}`, 'x'])),
    });
    const allowed = await postForm(web.url, '/tasks', fields(1024, '1024 fields'), page.cookie);
    expect(allowed.status).toBe(303);
    const refused = await postForm(web.url, '/tasks', fields(1025, '1025 fields'), page.cookie);
    expect({
      status: refused.status,
      type: refused.headers.get('content-type'),
      text: await refused.text(),
    }).toEqual({ status: 400, type: TEXT, text: TOO_MANY_FIELDS });
    expect(TOO_MANY_FIELDS).toBe('Too many form fields: the limit is 1024.');
    expect((await tasks()).map((t) => t.title).filter((t) => t.endsWith(' fields'))).toEqual(['1024 fields']);
  });

  it('shows markup in a title as text', async () => {
    const page = await openPage(web.url);
    await postForm(web.url, '/tasks', { _csrf: page.token, title: '<script>alert(1)</script>' }, page.cookie);
    const html = await (await fetch(`${web.url}/`)).text();
    expect(html).toContain('<td class="title">&lt;script&gt;alert(1)&lt;/script&gt;</td>');
    expect(html).not.toContain('<script>alert(1)');
  });
});

describe('Create refuses forged requests', () => {
  it('a forged or missing form token: 403, nothing stored or sent', async () => {
    const page = await openPage(web.url);
    const other = await openPage(web.url);
    const [count, listed] = [await eventCount(), (await tasks()).length];
    const attempts = [
      // One character changed, the first: the last may carry only padding bits, or already be the one put in.
      postForm(
        web.url,
        '/tasks',
        { _csrf: `${page.token.startsWith('a') ? 'b' : 'a'}${page.token.slice(1)}`, title: 'forged' },
        page.cookie,
      ),
      postForm(web.url, '/tasks', { title: 'no token' }, page.cookie),
      postForm(web.url, '/tasks', { _csrf: page.token, title: 'no cookies' }),
      // Another session's token and cookies mixed: the token is bound to its own session.
      postForm(web.url, '/tasks', { _csrf: other.token, title: 'mixed' }, page.cookie),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(403);
      expect(response.headers.get('content-type')).toBe(TEXT);
      expect(await response.text()).toBe(BAD_FORM_TOKEN);
    }
    expect((await tasks()).length).toBe(listed);
    expect(await eventCount()).toBe(count);
  });

  it('a session cookie the app cannot verify counts as no session: the API and pages answer, its form is refused', async () => {
    const page = await openPage(web.url);
    const listed = (await tasks()).length;
    const session = page.cookie.split('; ').find((c) => c.startsWith('taskstack.a.session=')) as string;
    const form = page.cookie.split('; ').find((c) => c.startsWith('taskstack.a.form=')) as string;
    const tampered = session.replace('%22sid%22%3A%22', '%22sid%22%3A%22x');
    const unsigned = 'taskstack.a.session=j%3A%7B%22sid%22%3A%22abc%22%7D';
    for (const cookie of [`${tampered}; ${form}`, `${unsigned}; ${form}`, 'taskstack.a.session=garbage']) {
      expect((await getTasks(web.url, { cookie })).status).toBe(200);
      const response = await postJson(web.url, '{"title":"t"}', 'application/json', { cookie });
      expect(response.status).toBe(200);
      // A page starts a new session: a new signed cookie replaces the one that could not be verified.
      const index = await fetch(`${web.url}/`, { headers: { cookie } });
      expect(index.status).toBe(200);
      expect(
        index.headers.getSetCookie().find((c) => c.startsWith('taskstack.a.session=s%3A')),
      ).toBeDefined();
      const refused = await postForm(web.url, '/tasks', { _csrf: page.token, title: 'tampered' }, cookie);
      expect(refused.status).toBe(403);
      expect(await refused.text()).toBe(BAD_FORM_TOKEN);
    }
    expect((await tasks()).filter((t) => t.title === 'tampered')).toEqual([]);
    expect((await tasks()).length).toBe(listed + 3);
  });

  it('after a restart with a random session secret, the old cookie counts as none; its form is refused', async () => {
    const port = await freePort();
    let restarted = await startWebApp({}, port);
    try {
      const page = await openPage(restarted.url);
      await restarted.stop();
      restarted = await startWebApp({}, port);
      expect((await getTasks(restarted.url, { cookie: page.cookie })).status).toBe(200);
      expect((await fetch(`${restarted.url}/`, { headers: { cookie: page.cookie } })).status).toBe(200);
      const refused = await postForm(
        restarted.url,
        '/tasks',
        { _csrf: page.token, title: 'old form' },
        page.cookie,
      );
      expect(refused.status).toBe(403);
      expect(await refused.text()).toBe(BAD_FORM_TOKEN);
    } finally {
      await restarted.stop();
    }
  });
});

describe('JSON API /api/tasks', () => {
  it('POST answers the task with a new GUID id (a client id is replaced, unknown fields dropped); GET lists it', async () => {
    const count = await eventCount();
    const response = await postJson(
      web.url,
      JSON.stringify({ id: 'mine', title: 'From the API', description: 'd', dueDate: 'tomorrow', extra: 1 }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const task = (await response.json()) as Task;
    expect(task).toEqual({
      id: expect.stringMatching(GUID),
      title: 'From the API',
      description: 'd',
      dueDate: 'tomorrow',
    });
    const listed = await getTasks(web.url);
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as Task[]).filter((t) => t.id === task.id)).toEqual([task]);
    // Only the Create action sends a message (the spec's producer); the API does not.
    expect(await eventCount()).toBe(count);
  });

  it('title missing or empty: 400 Title is required.', async () => {
    for (const body of [
      '{}',
      '{"title":""}',
      '{"title":null,"description":"d"}',
      '{"title":" "}',
      '',
      'null',
      ' null ',
    ]) {
      const response = await postJson(web.url, body);
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toBe(TEXT);
      expect(await response.text()).toBe(TITLE_REQUIRED);
    }
  });

  it('bad bodies: a clear 4xx text, never a stack trace, nothing stored, the app still up', async () => {
    const listed = (await tasks()).length;
    const huge = JSON.stringify({ title: 'big', description: 'x'.repeat(10 * 1024 * 1024) });
    const cases: [Promise<Response>, number, string][] = [
      [postJson(web.url, '{"title": "broken'), 400, NOT_JSON],
      [postJson(web.url, '["title"]'), 400, NOT_AN_OBJECT],
      [postJson(web.url, '"a title"'), 400, NOT_AN_OBJECT],
      [postJson(web.url, '{"title": 5}'), 400, WRONG_TYPE],
      [postJson(web.url, '{"title":"t","dueDate":{"day":1}}'), 400, WRONG_TYPE],
      [postJson(web.url, '{"title":"t"}', 'text/plain'), 415, JSON_ONLY],
      [postJson(web.url, '{"title":"t"}', 'application/xml'), 415, JSON_ONLY],
      [postJson(web.url, '{"title":"t"}', 'application/json; charset=latin1'), 415, JSON_CHARSET],
      [postJson(web.url, '{"title":"t"}', 'text/json; charset=utf-32'), 415, JSON_CHARSET],
      [postJson(web.url, huge), 413, TOO_LARGE],
      [
        postForm(web.url, '/tasks', { title: 'big', description: 'x'.repeat(10 * 1024 * 1024) }),
        413,
        TOO_LARGE,
      ],
    ];
    for (const [pending, status, text] of cases) {
      const response = await pending;
      expect({
        status: response.status,
        type: response.headers.get('content-type'),
        text: await response.text(),
      }).toEqual({
        status,
        type: TEXT,
        text,
      });
    }
    expect(TOO_LARGE).toBe('Request too large: the limit is 1048576 bytes.');
    expect((await tasks()).length).toBe(listed);
    expect(web.running()).toBe(true);
  });

  it('reads the JSON media types ASP.NET reads (application/json, text/json, application/*+json) in UTF-8 or UTF-16', async () => {
    const utf16 = Buffer.from('{"title":"in UTF-16 ✓"}', 'utf16le');
    const cases: [string | Buffer<ArrayBuffer>, string][] = [
      ['{"title":"as text/json"}', 'text/json'],
      ['{"title":"as problem+json"}', 'application/problem+json'],
      ['{"title":"as vnd+json"}', 'application/vnd.taskstack+json; charset=UTF-8'],
      [utf16, 'application/json; charset=utf-16'],
      [utf16, 'application/json; charset="utf-16le"'],
    ];
    for (const [body, type] of cases) {
      const response = await postJson(web.url, body, type);
      expect(response.status).toBe(200);
      const title = typeof body === 'string' ? (JSON.parse(body) as Task).title : 'in UTF-16 ✓';
      expect(((await response.json()) as Task).title).toBe(title);
    }
  });

  it('a body is read as sent, Content-Encoding not applied (ASP.NET Core without request decompression)', async () => {
    const listed = (await tasks()).length;
    const json = '{"title":"compressed"}';
    for (const [body, encoding] of [
      [gzipSync(json), 'gzip'],
      [brotliCompressSync(json), 'br'],
      [deflateSync(json), 'deflate'],
    ] as const) {
      const response = await postJson(web.url, body, 'application/json', { 'content-encoding': encoding });
      expect({ status: response.status, text: await response.text() }).toEqual({
        status: 400,
        text: NOT_JSON,
      });
    }
    expect((await tasks()).length).toBe(listed);
    // Plain JSON that claims to be compressed is read as the JSON it is.
    const plain = await postJson(web.url, '{"title":"not compressed"}', 'application/json', {
      'content-encoding': 'gzip',
    });
    expect(plain.status).toBe(200);
  });

  it('an unknown path is 404 Not found.', async () => {
    for (const [method, path] of [
      ['GET', '/nothing'],
      ['DELETE', '/api/tasks'],
      ['GET', '/signin-oidc'],
      ['POST', '/signout'],
    ]) {
      const response = await fetch(`${web.url}${path}`, { method });
      expect(response.status).toBe(404);
      expect(await response.text()).toBe(NOT_FOUND);
    }
  });
});

describe('logs', () => {
  it('hold no key, secret or cookie', async () => {
    const page = await openPage(web.url);
    await postForm(web.url, '/tasks', { _csrf: page.token, title: 'logged?' }, page.cookie);
    const key = /SharedAccessKey=([^;]+)/.exec(hubConnection)?.[1] as string;
    const output = web.output();
    expect(output).toContain('web app variant A listening on port');
    for (const secret of [
      key,
      SESSION_SECRET,
      page.token,
      ...page.cookie.split('; ').map((c) => c.split('=')[1]),
    ])
      expect(output).not.toContain(secret);
  });
});
