/**
 * The charset of a request body, decided as ASP.NET decides it and never in body-parser's words: the JSON
 * API reads what its JSON formatter reads (UTF-8 and UTF-16 by any name .NET gives them), the Create form
 * what ASP.NET's form reader reads as UTF-8 or ISO-8859-1; any other is the README's 415.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPage } from './form-client.ts';
import type { Task } from './src/tasks.ts';
import { getTasks, postJson, startWebApp, TEXTS, type WebApp } from './test-support.ts';

const { JSON_CHARSET, FORM_CHARSET, BAD_FORM_TOKEN } = TEXTS;
const TEXT = 'text/plain; charset=utf-8';
let web: WebApp;

beforeAll(async () => {
  web = await startWebApp({});
});
afterAll(() => web?.stop());

const titles = async () => ((await (await getTasks(web.url)).json()) as Task[]).map((task) => task.title);
const answer = async (response: Response) => ({
  status: response.status,
  type: response.headers.get('content-type'),
  text: await response.text(),
});

/** Create through the form, with a fresh page's token, the body in `encoding` and `contentType` as sent. */
async function create(title: string, contentType: string, encoding: BufferEncoding = 'utf8') {
  const page = await openPage(web.url);
  const body = new URLSearchParams({ _csrf: page.token, title }).toString();
  return fetch(`${web.url}/tasks`, {
    method: 'POST',
    headers: { 'content-type': contentType, cookie: page.cookie },
    body: Buffer.from(body, encoding),
    redirect: 'manual',
  });
}

describe('the JSON API', () => {
  it('reads UTF-8 and UTF-16 by the names .NET knows them by, the first charset named counting', async () => {
    const utf16 = Buffer.from('{"title":"UTF-16 as unicode ✓"}', 'utf16le');
    for (const [body, type] of [
      [utf16, 'application/json; charset=unicode'],
      [utf16, 'application/json; charset=UCS-2'],
      [Buffer.from('{"title":"UTF-8 by its old name ✓"}'), 'application/json; charset=unicode-1-1-utf-8'],
      [Buffer.from('{"title":"first charset ✓"}'), 'application/json; charset=utf-8; charset=latin1'],
    ] as const) {
      const response = await postJson(web.url, Buffer.from(body), type);
      expect(response.status, type).toBe(200);
    }
    expect(await titles()).toEqual(
      expect.arrayContaining(['UTF-16 as unicode ✓', 'UTF-8 by its old name ✓', 'first charset ✓']),
    );
  });

  it('answers any other charset with its 415 text, whatever body-parser would have said', async () => {
    const listed = (await titles()).length;
    for (const type of [
      'application/json; charset=latin1; charset=utf-8',
      'application/json; charset=utf-16be',
      'application/json; charset=utf-7',
      'application/json; charset=nonsense',
    ]) {
      expect(await answer(await postJson(web.url, '{"title":"t"}', type)), type).toEqual({
        status: 415,
        type: TEXT,
        text: JSON_CHARSET,
      });
    }
    expect((await titles()).length).toBe(listed);
  });
});

describe('the Create form', () => {
  it('reads UTF-8, a charset .NET does not know or UTF-7 (ASP.NET reads both as UTF-8), and ISO-8859-1', async () => {
    for (const [title, type, encoding] of [
      ['form in UTF-8 ✓', 'application/x-www-form-urlencoded; charset=UTF-8'],
      ['form, unknown charset ✓', 'application/x-www-form-urlencoded; charset=nonsense'],
      ['form, UTF-7 ✓', 'application/x-www-form-urlencoded; charset=utf-7'],
      ['form in ASCII', 'application/x-www-form-urlencoded; charset=us-ascii', 'ascii'],
      ['form in Latin-1', 'application/x-www-form-urlencoded; charset=latin1', 'latin1'],
    ] as const) {
      const response = await create(title, type, encoding);
      expect(response.status, type).toBe(303);
    }
    expect(await titles()).toEqual(
      expect.arrayContaining([
        'form in UTF-8 ✓',
        'form, unknown charset ✓',
        'form, UTF-7 ✓',
        'form in ASCII',
        'form in Latin-1',
      ]),
    );
  });

  it('answers UTF-16 and UTF-32 with its 415 text, not body-parser’s, and keeps nothing', async () => {
    const listed = (await titles()).length;
    for (const charset of ['utf-16', 'UTF-16', 'utf-16be', 'unicode', 'utf-32']) {
      const response = await create('t', `application/x-www-form-urlencoded; charset=${charset}`, 'utf16le');
      expect(await answer(response), charset).toEqual({ status: 415, type: TEXT, text: FORM_CHARSET });
    }
    expect(FORM_CHARSET).toBe('Content-Type charset must be utf-8 or iso-8859-1.');
    expect((await titles()).length).toBe(listed);
  });

  it('still refuses a form without its token (the charset decided first)', async () => {
    const response = await fetch(`${web.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=nonsense' },
      body: 'title=t',
    });
    expect(await answer(response)).toEqual({ status: 403, type: TEXT, text: BAD_FORM_TOKEN });
    expect(web.running()).toBe(true);
  });
});
