/** What a failed row prints: the received answer against the documented one, to the byte. */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROWS, type Row } from './rows.ts';
import { runRow, runTable, shown } from './table.ts';

describe('a row whose body differs', () => {
  let body = '';
  let status = 400;
  let contentType = 'text/plain; charset=utf-8';
  let server: Server;
  let baseUrl = '';

  beforeAll(async () => {
    server = createServer((_, response) => {
      response.writeHead(status, { 'content-type': contentType }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const row: Row = {
    name: 'managetask POST: Title missing → 400',
    surface: 'functions',
    method: 'post',
    path: '/api/managetask',
    needs: ['baseUrl'],
    request: (t) => ({ url: `${t.baseUrl}/api/managetask`, init: { method: 'POST', body: '{}' } }),
    status: 400,
    body: 'Please provide a title.',
  };

  it.each([
    [
      'Please provide a title.\u200b',
      'body "Please provide a title.\\u200b" (24 characters), expected "Please provide a title." (23): they differ from character 24',
    ],
    [
      'Please\u00a0provide a title.',
      'body "Please\\u00a0provide a title." (23 characters), expected "Please provide a title." (23): they differ from character 7',
    ],
    [
      `Please provide a title.${'!'.repeat(400)}`,
      `body "Please provide a title.${'!'.repeat(277)}"… (423 characters), expected "Please provide a title." (23): they differ from character 24`,
    ],
  ])('%j: the difference is visible and located', async (received, detail) => {
    body = received;
    const result = await runRow(row, { baseUrl }, {});
    expect(result.outcome).toBe('fail');
    expect(result.detail).toContain(`; ${detail}`);
  });

  it('a JSON answer with generated values must still be compact, as the apps write JSON', async () => {
    status = 200;
    contentType = 'application/json; charset=utf-8';
    const task = { id: '0b5c7f8e-1d2a-4c3b-9e8f-112233445566', Title: 'a', Description: null, DueDate: null };
    const readRow: Row = {
      ...row,
      name: 'managetask GET: a task → 200',
      method: 'get',
      request: (t) => ({ url: `${t.baseUrl}/api/managetask?taskId=${task.id}` }),
      status: 200,
      body: undefined,
    };
    body = JSON.stringify(task, null, 1);
    expect(await runRow(readRow, { baseUrl }, {})).toMatchObject({
      outcome: 'fail',
      detail: `body ${shown(body)} is not compact JSON (whitespace between its tokens)`,
    });
    body = JSON.stringify(task);
    expect(await runRow(readRow, { baseUrl }, {})).toMatchObject({ outcome: 'pass', detail: '' });
  });

  it('a 429 where the gateway should have answered, on a target whose clock cannot move: says why', async () => {
    status = 429;
    contentType = 'application/json';
    body = '{ "statusCode": 429, "message": "Rate limit is exceeded. Try again in 42 seconds." }';
    const gatewayRow: Row = {
      ...row,
      name: 'gateway managetask: Title missing → 400',
      surface: 'gatewayFunctions',
      path: '/managetask',
      needs: ['gatewayUrl'],
      request: (t) => ({ url: `${t.gatewayUrl}/functions/managetask`, init: { method: 'POST', body: '{}' } }),
    };
    const result = await runRow(gatewayRow, { gatewayUrl: baseUrl }, {});
    expect(result.detail).toMatch(
      /^status 429, expected 400 \(the subscription made calls in the last 60 s: without controlUrl and masterKey, the gateway rows need a subscription idle for a minute\); /,
    );
  });
});

describe('a target at the wrong address (every answer an empty 404)', () => {
  let server: Server;
  let baseUrl = '';

  beforeAll(async () => {
    server = createServer((_, response) => response.writeHead(404).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('passes no empty-404 row: each relies on a row showing the request reached the function', async () => {
    const results = await runTable({ baseUrl, functionKey: 'key' });
    const notFound = results.filter(({ row }) => row.status === 404);
    expect(notFound.map(({ row }) => row.name)).toEqual([
      'managetask GET: no such document → 404',
      'getattachment: no such blob → 404',
    ]);
    expect(notFound.map(({ outcome, detail }) => [outcome, detail])).toEqual([
      ['fail', 'not run: it relies on "managetask GET: taskId missing → 400", which did not pass'],
      [
        'fail',
        'not run: it relies on "getattachment: a file name that cannot name a blob → 400", which did not pass',
      ],
    ]);
    expect(results.filter(({ outcome }) => outcome === 'pass')).toEqual([]);
  });
});

it('every row a row relies on comes before it', () => {
  const before = new Set<string>();
  for (const row of ROWS) {
    if (row.reliesOn) expect(before, row.name).toContain(row.reliesOn);
    before.add(row.name);
  }
});
