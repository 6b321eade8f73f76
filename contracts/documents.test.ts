import { readFileSync } from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { answerOf, DOCUMENTS, documentPath, problemsWith, type Surface } from './validate.ts';

const surfaces = Object.keys(DOCUMENTS) as Surface[];
const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

describe('the OpenAPI documents', () => {
  it.each(surfaces)('%s is a valid OpenAPI 3 document', async (surface) => {
    await expect(SwaggerParser.validate(documentPath(surface))).resolves.toBeTruthy();
  });

  it('gives every documented body an example (the exact words of every text), as the gateway and its portal need', () => {
    for (const surface of surfaces) {
      const text = readFileSync(documentPath(surface), 'utf8');
      const document = JSON.parse(text);
      for (const [path, item] of Object.entries<Record<string, { responses: object }>>(document.paths))
        for (const [method, operation] of Object.entries(item))
          for (const [status, response] of Object.entries<{
            content?: Record<string, { example?: unknown }>;
          }>(operation.responses as Record<string, never>))
            for (const [type, media] of Object.entries(response.content ?? {}))
              expect(media.example, `${surface} ${method} ${path} ${status} ${type}`).toBeDefined();
    }
  });
});

describe('the response validator', () => {
  const createBad = (body: string, contentType: string | null = TEXT, status = 400) =>
    problemsWith('functions', 'post', '/api/createtask', { status, contentType, body });

  it('accepts the documented text and refuses any other', async () => {
    expect(await createBad('Please provide a valid task with a title.')).toEqual([]);
    expect(await createBad('Please provide a valid task with a title')).not.toEqual([]);
    expect(await createBad('Please provide a valid task with a title.', 'text/plain')).not.toEqual([]);
  });

  it('reads a body as its bytes say: a byte order mark before the text is refused, bytes that are not UTF-8 too', async () => {
    const sent = (bytes: number[]) =>
      answerOf(new Response(new Uint8Array(bytes), { status: 400, headers: { 'content-type': TEXT } }));
    const text = [...new TextEncoder().encode('Please provide a valid task with a title.')];
    const withBom = await sent([0xef, 0xbb, 0xbf, ...text]);
    expect(withBom.body).toBe('\ufeffPlease provide a valid task with a title.');
    expect(await createBad(withBom.body)).not.toEqual([]);
    await expect(sent([...text, 0xff])).rejects.toThrow("the 400 answer's body (42 bytes) is not UTF-8");
  });

  it('refuses an undocumented status and an empty body where text is documented', async () => {
    expect((await createBad('', TEXT, 418))[0]).toMatch(/status 418 is not documented/);
    expect((await createBad('', null))[0]).toMatch(/an empty body is not documented/);
    expect(await createBad('', null, 500)).toEqual([]);
  });

  it('checks JSON bodies against their schemas, null where the document allows it', async () => {
    const task = { id: '0b5c7f8e-1d2a-4c3b-9e8f-112233445566', Title: 'a', Description: null, DueDate: null };
    const read = (value: unknown) =>
      problemsWith('functions', 'get', '/api/managetask', {
        status: 200,
        contentType: JSON_TYPE,
        body: JSON.stringify(value),
      });
    expect(await read(task)).toEqual([]);
    expect(await read({ ...task, id: 'not a guid' })).not.toEqual([]);
    expect(await read({ ...task, title: 'camel' })).not.toEqual([]);
    const { DueDate: _, ...withoutDueDate } = task;
    expect(await read(withoutDueDate)).not.toEqual([]);
  });

  it('allows an empty 500 or its documented text where the spec names both', async () => {
    const upload = (body: string, contentType: string | null) =>
      problemsWith('functions', 'post', '/api/uploadattachment', { status: 500, contentType, body });
    expect(await upload('', null)).toEqual([]);
    expect(await upload('Error uploading file: boom', TEXT)).toEqual([]);
    expect(await upload('Upload failed: boom', TEXT)).not.toEqual([]);
  });
});
