/** CreateTask and ManageTask through the local Functions host: every Errors-table row, to the byte. */
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppStack, answer, JSON_TYPE, startAppStack, TEXT } from './test-support.ts';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ENCRYPTION_KEY = 'tasks-test-key-0123456789abcdefXYZ';
let app: AppStack;

beforeAll(async () => {
  app = await startAppStack({ encryptionKey: ENCRYPTION_KEY });
});
afterAll(async () => {
  await app?.stop();
});

const post = (path: string, body?: string, headers: Record<string, string> = {}) =>
  fetch(app.url(path), { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

describe('POST /api/createtask', () => {
  const invalid = { status: 400, contentType: TEXT, body: 'Please provide a valid task with a title.' };

  it.each([
    ['no body', undefined],
    ['unparsable JSON', '{"Title": '],
    ['a JSON array', '[{"Title":"a"}]'],
    ['a JSON string', '"Title"'],
    ['JSON null', 'null'],
    ['no Title', '{"Description":"d"}'],
    ['an empty Title', '{"Title":""}'],
    ['a numeric Title', '{"Title":5}'],
    ['an object Description', '{"Title":"t","Description":{"a":1}}'],
  ])('answers 400 for %s', async (_, body) => {
    expect(await answer(await post('createtask', body))).toEqual(invalid);
  });

  it('creates the task with a new Id, reads names case-insensitively and writes tasks/<Id>.json', async () => {
    const body = JSON.stringify({
      id: 'mine',
      Id: 'mine',
      title: 'Buy milk',
      DESCRIPTION: 'two',
      dueDate: 'Fri',
      X: 1,
    });
    const response = await post('createtask', body);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(JSON_TYPE);
    const task = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(task)).toEqual(['Id', 'Title', 'Description', 'DueDate']);
    expect(task).toMatchObject({ Title: 'Buy milk', Description: 'two', DueDate: 'Fri' });
    expect(task.Id).toMatch(GUID);
    const blob = BlobServiceClient.fromConnectionString(
      app.stack.description.connections.AzureWebJobsStorage ?? '',
    )
      .getContainerClient('tasks')
      .getBlockBlobClient(`${task.Id}.json`);
    expect(JSON.parse((await blob.downloadToBuffer()).toString('utf8'))).toEqual(task);
  });

  it.each([
    ['{"title":"","Title":"B"}', 200],
    ['{"Title":"A","title":""}', 400],
    ['{"Title":"","Title":"B"}', 200],
  ])('takes the last of the keys that differ only in case, as .NET binds them: %s', async (body, status) => {
    expect((await post('createtask', body)).status).toBe(status);
  });

  it('accepts a body that starts with a UTF-8 byte order mark, as the original does', async () => {
    const response = await post('createtask', '\uFEFF{"Title":"with a BOM"}');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ Title: 'with a BOM', Description: null });
  });

  it('accepts only POST', async () => {
    expect((await fetch(app.url('createtask'))).status).toBe(404);
  });

  it('refuses a body over 1 MiB with 413 and a clear text', async () => {
    const body = JSON.stringify({ Title: 'x'.repeat(1024 * 1024) });
    expect(await answer(await post('createtask', body))).toEqual({
      status: 413,
      contentType: TEXT,
      body: 'Request too large: the limit is 1048576 bytes.',
    });
  });
});

describe('/api/managetask', () => {
  const noTitle = { status: 400, contentType: TEXT, body: 'Please provide a title.' };

  it.each([
    ['no body', undefined],
    ['unparsable JSON', 'not json'],
    ['no Title', '{"Description":"d"}'],
    ['an empty Title', '{"Title":""}'],
    ['a null Title', '{"Title":null}'],
    ['a lower-case title (names are PascalCase here)', '{"title":"t"}'],
  ])('POST answers 400 for %s', async (_, body) => {
    expect(await answer(await post('managetask', body))).toEqual(noTitle);
  });

  it.each([
    ['a numeric Title', '{"Title":5}'],
    ['an array Description', '{"Title":"t","Description":["d"]}'],
    ['a boolean DueDate', '{"Title":"t","DueDate":true}'],
  ])('POST answers 400 for %s', async (_, body) => {
    expect(await answer(await post('managetask', body))).toEqual({
      status: 400,
      contentType: TEXT,
      body: 'Title, Description and DueDate must be strings.',
    });
  });

  it.each([
    ['no taskId', {}],
    ['an empty taskId', { taskId: '' }],
  ])('GET answers 400 for %s', async (_, query) => {
    expect(await answer(await fetch(app.url('managetask', query)))).toEqual({
      status: 400,
      contentType: TEXT,
      body: 'Please provide taskId.',
    });
  });

  it.each([
    '00000000-0000-4000-8000-000000000000',
    'a/b',
    'q?x',
    'x'.repeat(300),
    // Ids no document can be read by: blank ones (the SDK refuses them) and the URL dot segments
    // (resolved away from the request's path before it reaches the account).
    ' ',
    '\t\n',
    '\u00a0\u2003',
    '.',
    '..',
  ])('GET answers 404 with an empty body for an unknown id (%j)', async (taskId) => {
    expect(await answer(await fetch(app.url('managetask', { taskId })))).toEqual({
      status: 404,
      contentType: null,
      body: '',
    });
  });

  it("GET reads taskId in any case, and two taskIds as their comma-joined id (ASP.NET's query collection)", async () => {
    const created = (await (await post('managetask', '{"Title":"Cased"}')).json()) as { id: string };
    const read = await fetch(`${app.url('managetask')}&TaskID=${created.id}`);
    expect(await read.json()).toMatchObject({ id: created.id, Title: 'Cased' });
    const twice = await fetch(`${app.url('managetask')}&taskId=${created.id}&taskId=${created.id}`);
    expect(await answer(twice)).toEqual({ status: 404, contentType: null, body: '' });
  });

  it('POST answers the encrypted form, GET the plain text; extra fields are dropped', async () => {
    const response = await post(
      'managetask',
      JSON.stringify({
        id: 'mine',
        Title: 'Plan',
        Description: 'secret plan',
        DueDate: '2030-01-01',
        Extra: 1,
      }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(JSON_TYPE);
    const created = (await response.json()) as Record<string, string>;
    expect(Object.keys(created)).toEqual(['id', 'Title', 'Description', 'DueDate']);
    expect(created.id).toMatch(GUID);
    expect(created.Description).not.toContain('secret');
    expect(Buffer.from(created.Description ?? '', 'base64')).toHaveLength(32);

    const read = await fetch(app.url('managetask', { taskId: created.id ?? '' }));
    expect(read.status).toBe(200);
    expect(read.headers.get('content-type')).toBe(JSON_TYPE);
    expect(await read.json()).toEqual({ ...created, Description: 'secret plan' });
  });

  it('POST accepts a body that starts with a UTF-8 byte order mark, as the original does', async () => {
    const response = await post('managetask', '\uFEFF{"Title":"with a BOM","Description":"d"}');
    expect(response.status).toBe(200);
    const { id } = (await response.json()) as { id: string };
    expect(await (await fetch(app.url('managetask', { taskId: id }))).json()).toMatchObject({
      Title: 'with a BOM',
      Description: 'd',
    });
  });

  it('keeps a missing Description null and an empty one encrypted', async () => {
    const none = (await (await post('managetask', '{"Title":"t"}')).json()) as Record<string, unknown>;
    expect(none).toMatchObject({ Description: null, DueDate: null });
    const blank = (await (await post('managetask', '{"Title":"t","Description":""}')).json()) as {
      id: string;
      Description: string;
    };
    expect(Buffer.from(blank.Description, 'base64')).toHaveLength(32);
    const read = await (await fetch(app.url('managetask', { taskId: blank.id }))).json();
    expect(read).toMatchObject({ Description: '' });
  });

  it('stores a very long Title and Description (up to the 1 MiB body limit)', async () => {
    const Title = 'T'.repeat(100_000);
    const Description = 'é'.repeat(200_000);
    const created = (await (await post('managetask', JSON.stringify({ Title, Description }))).json()) as {
      id: string;
    };
    const read = await (await fetch(app.url('managetask', { taskId: created.id }))).json();
    expect(read).toMatchObject({ Title, Description });
  });

  it('matches the route case-insensitively', async () => {
    const response = await fetch(
      `${app.baseUrl}/api/ManageTask?${new URLSearchParams({ code: app.key, taskId: 'none' })}`,
    );
    expect(response.status).toBe(404);
  });
});

describe('function keys', () => {
  it.each([
    ['POST', 'createtask'],
    ['POST', 'managetask'],
    ['GET', 'managetask'],
    ['POST', 'uploadattachment'],
    ['GET', 'getattachment'],
  ])('%s /api/%s answers an empty 401 without a key and with a wrong one', async (method, path) => {
    const without = await fetch(`${app.baseUrl}/api/${path}`, { method });
    const wrong = await fetch(`${app.baseUrl}/api/${path}?code=${app.key}x`, { method });
    const wrongHeader = await fetch(`${app.baseUrl}/api/${path}`, {
      method,
      headers: { 'x-functions-key': 'not-the-key' },
    });
    const refused = { status: 401, contentType: null, body: '' };
    expect([await answer(without), await answer(wrong), await answer(wrongHeader)]).toEqual([
      refused,
      refused,
      refused,
    ]);
  });

  it('accepts the key in the x-functions-key header', async () => {
    const response = await fetch(`${app.baseUrl}/api/managetask`, {
      headers: { 'x-functions-key': app.key },
    });
    expect(await answer(response)).toEqual({
      status: 400,
      contentType: TEXT,
      body: 'Please provide taskId.',
    });
  });
});

describe('logs', () => {
  it('never contain the EncryptionKey value (every log line of this run)', async () => {
    const text = app.allLogText();
    expect(text.length).toBeGreaterThan(0);
    expect(text).not.toContain(ENCRYPTION_KEY);
    expect(text).not.toContain(ENCRYPTION_KEY.slice(0, 32));
  });
});
