/** HTTP streaming apps: requests proxied unbuffered to the app's own proxy, responses streamed back as written. */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { appPath, readLog } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let host: ComponentUnderTest;
const url = (path: string) => `${host.endpoints.baseUrl}${path}`;

beforeAll(async () => {
  const settings = { AzureWebJobsSecretStorageType: 'files' };
  host = await startComponent(
    'functions',
    { port: 0, appDir: appPath('app-stream'), logFile, settings },
    data.dir,
  );
});

afterAll(async () => {
  await host?.stop();
  data.remove();
});

describe('HTTP streaming (app.setup({ enableHttpStream: true }))', () => {
  it('streams the response to the client while the function is still writing it', async () => {
    const response = await fetch(url('/api/stream'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain');
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    expect(decoder.decode((await reader.read()).value)).toBe('first\n');
    // The function is blocked until /api/release: the first chunk could only have been streamed.
    expect(readLog(logFile).some((e) => e.message.startsWith("Executed 'Functions.stream'"))).toBe(false);
    expect(await (await fetch(url('/api/release'), { method: 'POST' })).text()).toBe('released');
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += decoder.decode(chunk.value);
    expect(rest).toBe('second\n');
    await waitFor('the Executed line', () =>
      readLog(logFile).some((e) => e.message.startsWith("Executed 'Functions.stream' (Succeeded")),
    );
  });

  it('streams request bodies to the function with headers, route parameters and cookies', async () => {
    const body = new Uint8Array(5 * 1024 * 1024).fill(1);
    const response = await fetch(url('/api/count/abc'), {
      method: 'POST',
      body,
      headers: { 'x-test': 'yes' },
    });
    expect(await response.json()).toEqual({ label: 'abc', bytes: body.length, header: 'yes' });
    expect(response.headers.get('set-cookie')).toBe(`counted=${body.length}; Path=/`);
    expect(response.headers.get('x-ms-invocation-id')).toBeNull();
  });

  it('answers 500 without details when a streaming function throws, and keeps serving', async () => {
    const response = await fetch(url('/api/streamFail'));
    expect(response.status).toBe(500);
    expect(await response.text()).toBe('');
    const count = await fetch(url('/api/count/x'), { method: 'POST', body: 'abc' });
    expect(await count.json()).toMatchObject({ bytes: 3 });
  });
});
