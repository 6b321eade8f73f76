/** UploadAttachment and GetAttachment through the local Functions host: Errors-table rows and names. */
import { readFileSync } from 'node:fs';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendLarge } from '../../emulators/functions-host/test/helpers.ts';
import { MAX_TASK_BODY_BYTES, MAX_UPLOAD_BYTES } from './src/lib/body.ts';
import { type AppStack, answer, JSON_TYPE, startAppStack, TEXT } from './test-support.ts';

const INVALID_TASK_ID =
  'Invalid taskId: use 1 to 255 printable ASCII characters, without / or \\, without leading or trailing spaces, not ending with a dot.';
const INVALID_FILE_NAME =
  'Invalid file name: use 1 to 255 characters, without /, \\ or control characters, without leading or trailing spaces, not ending with a dot.';
const NEED_BOTH = { status: 400, contentType: TEXT, body: 'Please provide a file and taskId.' };

let app: AppStack;
beforeAll(async () => {
  app = await startAppStack({ components: ['identity', 'blob', 'functions'] });
});
afterAll(async () => {
  await app?.stop();
});

const attachments = () =>
  BlobServiceClient.fromConnectionString(
    app.stack.description.connections.StorageConnection ?? '',
  ).getContainerClient('attachments');

function form(parts: {
  taskId?: string;
  file?: { name: string; type?: string; content?: string };
}): FormData {
  const data = new FormData();
  if (parts.taskId !== undefined) data.append('taskId', parts.taskId);
  if (parts.file) {
    const { name, type = 'text/plain', content = 'hello' } = parts.file;
    data.append('file', new Blob([content], { type }), name);
  }
  return data;
}

/** A multipart body written by hand, for Content-Disposition forms FormData never writes. */
function rawForm(
  taskId: string,
  fileDisposition: string,
  content = 'hello',
): [string, Record<string, string>] {
  const body = [
    '--b0undary',
    'Content-Disposition: form-data; name="taskId"',
    '',
    taskId,
    '--b0undary',
    `Content-Disposition: form-data; ${fileDisposition}`,
    'Content-Type: text/plain',
    '',
    content,
    '--b0undary--',
    '',
  ].join('\r\n');
  return [body, { 'content-type': 'multipart/form-data; boundary=b0undary' }];
}

const upload = (body: FormData | string, headers: Record<string, string> = {}) =>
  fetch(app.url('uploadattachment'), { method: 'POST', body, headers });
const metadata = (query: Record<string, string>) => fetch(app.url('getattachment', query));

describe('POST /api/uploadattachment', () => {
  it.each([
    ['JSON', 'application/json'],
    ['plain text', 'text/plain'],
    ['a multipart type that is not form-data', 'multipart/mixed; boundary=x'],
  ])('answers 400 for a %s body', async (_, type) => {
    expect(await answer(await upload('{}', { 'content-type': type }))).toEqual({
      status: 400,
      contentType: TEXT,
      body: 'Please send a multipart form.',
    });
  });

  it('answers 400 for a request without content type or with a broken multipart body', async () => {
    const none = await fetch(app.url('uploadattachment'), { method: 'POST' });
    const broken = await upload('--x\r\nnot a part', { 'content-type': 'multipart/form-data; boundary=x' });
    for (const response of [none, broken]) {
      expect(await answer(response)).toEqual({
        status: 400,
        contentType: TEXT,
        body: 'Please send a multipart form.',
      });
    }
  });

  it.each([
    ['no file', form({ taskId: 't1' })],
    ['no taskId', form({ file: { name: 'a.txt' } })],
    ['an empty taskId', form({ taskId: '', file: { name: 'a.txt' } })],
  ])('answers 400 for %s', async (_, body) => {
    expect(await answer(await upload(body))).toEqual(NEED_BOTH);
  });

  it('answers 400 for a url-encoded form (a form, but without a file)', async () => {
    expect(
      await answer(
        await upload(new URLSearchParams({ taskId: 't1' }).toString(), {
          'content-type': 'application/x-www-form-urlencoded',
        }),
      ),
    ).toEqual(NEED_BOTH);
  });

  it('stores the file under <taskId>/<fileName> with its content type and TaskId metadata', async () => {
    const response = await upload(
      form({ taskId: 'task-1', file: { name: 'notes.txt', type: 'text/markdown', content: '# hi' } }),
    );
    expect(await answer(response)).toEqual({
      status: 200,
      contentType: TEXT,
      body: 'File uploaded: task-1/notes.txt',
    });
    const blob = attachments().getBlockBlobClient('task-1/notes.txt');
    expect((await blob.downloadToBuffer()).toString()).toBe('# hi');
    const properties = await blob.getProperties();
    expect(properties.contentType).toBe('text/markdown');
    expect(properties.metadata).toEqual({ taskid: 'task-1' });
    // Properties come back with lower-cased keys; a listing keeps the name as written: TaskId.
    const listed = [];
    for await (const item of attachments().listBlobsFlat({
      prefix: 'task-1/notes.txt',
      includeMetadata: true,
    }))
      listed.push({ name: item.name, metadata: item.metadata });
    expect(listed).toEqual([{ name: 'task-1/notes.txt', metadata: { TaskId: 'task-1' } }]);
  });

  it("reads the form as ASP.NET's form collection: names in any case, a repeated one joined by commas", async () => {
    const data = new FormData();
    data.append('TaskId', 'task-a');
    data.append('TASKID', 'b');
    data.append('file', new Blob(['x'], { type: 'text/plain' }), 'both.txt');
    expect(await answer(await upload(data))).toEqual({
      status: 200,
      contentType: TEXT,
      body: 'File uploaded: task-a,b/both.txt',
    });
    const read = await fetch(`${app.url('getattachment')}&TASKID=task-a,b&FileName=both.txt`);
    expect((await read.json()).TaskId).toBe('task-a,b');
    // Query values too: two taskIds ask for their comma-joined name.
    const twice = await fetch(`${app.url('getattachment')}&taskId=task-a&taskid=b&fileName=both.txt`);
    expect(twice.status).toBe(200);
  });

  it('replaces the blob on a second upload of the same name (content, type and metadata)', async () => {
    await upload(form({ taskId: 'task-2', file: { name: 'a.bin', type: 'text/plain', content: 'first' } }));
    const second = await upload(
      form({ taskId: 'task-2', file: { name: 'a.bin', type: 'image/png', content: 'second' } }),
    );
    expect(second.status).toBe(200);
    const blob = attachments().getBlockBlobClient('task-2/a.bin');
    expect((await blob.downloadToBuffer()).toString()).toBe('second');
    expect((await blob.getProperties()).contentType).toBe('image/png');
  });

  it.each([
    ['a slash', 'a/b.txt'],
    ['a backslash', 'a\\b.txt'],
    ['..', '..'],
    ['.', '.'],
    ['a trailing dot', 'name.'],
    ['a control character', 'a\u0001b.txt'],
    ['a leading space', ' a.txt'],
    ['256 characters', 'x'.repeat(256)],
  ])('refuses a file name with %s, storing nothing', async (_, name) => {
    const before = await countBlobs();
    expect(await answer(await upload(form({ taskId: 'task-3', file: { name } })))).toEqual({
      status: 400,
      contentType: TEXT,
      body: INVALID_FILE_NAME,
    });
    expect(await countBlobs()).toBe(before);
  });

  it.each([
    ['..', '..'],
    ['a slash', '../other'],
    ['a backslash', 'a\\b'],
    ['non-ASCII characters', 'tâche'],
  ])('refuses a taskId with %s', async (_, taskId) => {
    expect(await answer(await upload(form({ taskId, file: { name: 'a.txt' } })))).toEqual({
      status: 400,
      contentType: TEXT,
      body: INVALID_TASK_ID,
    });
  });

  it('keeps non-ASCII file names as given', async () => {
    const name = 'résumé 名前 ✓.txt';
    const response = await upload(form({ taskId: 'task-4', file: { name } }));
    expect(await answer(response)).toEqual({
      status: 200,
      contentType: TEXT,
      body: `File uploaded: task-4/${name}`,
    });
    const found = await metadata({ taskId: 'task-4', fileName: name });
    expect(found.status).toBe(200);
    expect(await attachments().getBlockBlobClient(`task-4/${name}`).exists()).toBe(true);
  });

  it.each([
    ['filename* alone', `name="file"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%E2%9C%93.txt`],
    [
      'filename* over filename',
      `name="file"; filename="resume.txt"; filename*=utf-8''r%C3%A9sum%C3%A9%20%E2%9C%93.txt`,
    ],
    [
      'filename* before filename',
      `name="file"; filename*=UTF-8'en'r%C3%A9sum%C3%A9%20%E2%9C%93.txt; filename="resume.txt"`,
    ],
  ])('takes an RFC 5987 file name (%s), as ASP.NET does', async (_, disposition) => {
    const response = await upload(...rawForm('task-8', disposition));
    expect(await answer(response)).toEqual({
      status: 200,
      contentType: TEXT,
      body: 'File uploaded: task-8/résumé ✓.txt',
    });
    expect(await attachments().getBlockBlobClient('task-8/résumé ✓.txt').exists()).toBe(true);
  });

  it('refuses a file name with a leading byte order mark, as getattachment does, storing nothing', async () => {
    const before = await countBlobs();
    for (const disposition of [
      'name="file"; filename="\uFEFFbom.txt"',
      `name="file"; filename*=UTF-8''%EF%BB%BFbom.txt`,
    ]) {
      expect(await answer(await upload(...rawForm('task-9', disposition))), disposition).toEqual({
        status: 400,
        contentType: TEXT,
        body: INVALID_FILE_NAME,
      });
    }
    expect(await countBlobs()).toBe(before);
    expect(await answer(await metadata({ taskId: 'task-9', fileName: '\uFEFFbom.txt' }))).toEqual({
      status: 400,
      contentType: TEXT,
      body: INVALID_FILE_NAME,
    });
  });

  it('refuses an upload over 10 MiB with 413, storing nothing', async () => {
    const big = form({ taskId: 'task-5', file: { name: 'big.bin', content: 'x'.repeat(10 * 1024 * 1024) } });
    expect(await answer(await upload(big))).toEqual({
      status: 413,
      contentType: TEXT,
      body: 'Request too large: the limit is 10485760 bytes.',
    });
    expect(await attachments().getBlockBlobClient('task-5/big.bin').exists()).toBe(false);
  });
  it('gets no body from a chunked upload, as in Azure (the host hands a function a body only with a Content-Length): 400', async () => {
    const total = 96 * 1024 * 1024;
    const result = await sendLarge(app.url('uploadattachment'), total, false, {
      'content-type': 'multipart/form-data; boundary=b0undary',
    });
    expect(result).toMatchObject({ status: 400, body: 'Please send a multipart form.' });
  });

  it('declares the largest body any function accepts in local.settings.json (Host.MaxRequestBodySize)', () => {
    const local = JSON.parse(readFileSync(new URL('./local.settings.json', import.meta.url), 'utf8'));
    expect(local.Host.MaxRequestBodySize).toBe(Math.max(MAX_UPLOAD_BYTES, MAX_TASK_BODY_BYTES));
  });
});

describe('GET /api/getattachment', () => {
  it.each([
    ['no parameters', {}],
    ['no fileName', { taskId: 't' }],
    ['no taskId', { fileName: 'f' }],
    ['an empty fileName', { taskId: 't', fileName: '' }],
  ])('answers 400 for %s', async (_, query) => {
    expect(await answer(await metadata(query))).toEqual({
      status: 400,
      contentType: TEXT,
      body: 'Please provide taskId and fileName.',
    });
  });

  it('answers 400 for a name that escapes the task folder', async () => {
    expect(await answer(await metadata({ taskId: 'task-1', fileName: '../task-1/notes.txt' }))).toEqual({
      status: 400,
      contentType: TEXT,
      body: INVALID_FILE_NAME,
    });
  });

  it('answers 404 with an empty body when the blob does not exist', async () => {
    expect(await answer(await metadata({ taskId: 'nobody', fileName: 'nothing.txt' }))).toEqual({
      status: 404,
      contentType: null,
      body: '',
    });
  });

  it('answers TaskId, ContentType and Uri', async () => {
    await upload(form({ taskId: 'task-6', file: { name: 'p.pdf', type: 'application/pdf' } }));
    const response = await metadata({ taskId: 'task-6', fileName: 'p.pdf' });
    expect(response.headers.get('content-type')).toBe(JSON_TYPE);
    expect(await response.text()).toBe(
      JSON.stringify({
        TaskId: 'task-6',
        ContentType: 'application/pdf',
        Uri: attachments().getBlockBlobClient('task-6/p.pdf').url,
      }),
    );
  });

  it('answers TaskId null when the blob has no TaskId metadata', async () => {
    await attachments().getBlockBlobClient('task-7/raw.txt').upload('raw', 3);
    const body = await (await metadata({ taskId: 'task-7', fileName: 'raw.txt' })).json();
    expect(body).toMatchObject({ TaskId: null, ContentType: 'application/octet-stream' });
  });
});

async function countBlobs(): Promise<number> {
  let count = 0;
  for await (const _ of attachments().listBlobsFlat()) count++;
  return count;
}
