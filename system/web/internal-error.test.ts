/**
 * The table's last row: `500 Internal server error.` for anything the app does not turn into another
 * answer. No failure the stack can cause reaches it (every store, sign-in and directory failure is a
 * 503), so the app is built here as build.ts builds it, around a task store that fails with an error of
 * its own, as a bug or an SDK failing in a way the store does not expect would.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDocumented } from '../../contracts/validate.ts';
import { close, listen } from '../../emulators/core/http.ts';
import { testDataDir } from '../../emulators/core/testing.ts';
import { bundleOptions } from '../build.ts';
import { pugViews } from './build.ts';
import type { createApp as CreateApp } from './src/app.ts';
import type { sessions as Sessions } from './src/session.ts';
import { postJson, TEXTS } from './test-support.ts';

const appDir = fileURLToPath(new URL('.', import.meta.url));
/** What the store's failure says: the log gets it, the answer never does. */
const REASON = 'socket hang up at /home/site/wwwroot/secret';

describe('a failure the app has no answer for', () => {
  const data = testDataDir();
  const logged: string[] = [];
  let server: Server;
  let url = '';

  beforeAll(async () => {
    const entry = join(data.dir, 'entry.ts');
    const source = (name: string) => JSON.stringify(join(appDir, 'src', name));
    writeFileSync(
      entry,
      `export { createApp } from ${source('app.ts')};\nexport { sessions } from ${source('session.ts')};\n`,
    );
    const options = bundleOptions(appDir);
    await build({
      ...options,
      plugins: [...(options.plugins ?? []), pugViews(new Set())],
      entryPoints: [entry],
      outdir: data.dir,
      write: true,
      // Vite would look for the sources a map names, and warn that they are not there.
      sourcemap: false,
    });
    const built = (await import(pathToFileURL(join(data.dir, 'entry.js')).href)) as {
      createApp: typeof CreateApp;
      sessions: typeof Sessions;
    };
    const fail = () => Promise.reject(new Error(REASON));
    const app = built.createApp({
      config: { variant: 'A', port: 0, sessionSecret: 'secret' },
      store: { list: fail, add: fail },
      sessions: built.sessions('secret', 'A'),
      log: (line) => logged.push(line),
    });
    server = createServer(app);
    url = `http://127.0.0.1:${await listen(server, 0)}`;
  }, 60_000);
  afterAll(async () => {
    await close(server);
    data.remove();
  });

  /** The answer is the table's 500, to the byte; the reason goes to the log only. */
  async function expectInternal(response: Response) {
    expect(response.status).toBe(500);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await response.text()).toBe(TEXTS.INTERNAL);
    expect(logged.splice(0)).toEqual([`request failed: ${REASON}`]);
  }

  it('answers 500 Internal server error. on the API and the pages, logs why, and serves on', async () => {
    const listed = await fetch(`${url}/api/tasks`);
    await expectDocumented('web', 'get', '/api/tasks', listed.clone());
    await expectInternal(listed);
    await expectInternal(await postJson(url, JSON.stringify({ title: 'kept?' })));
    await expectInternal(await fetch(url));
    const unknown = await fetch(`${url}/nothing`);
    expect([unknown.status, await unknown.text(), logged]).toEqual([404, TEXTS.NOT_FOUND, []]);
  });
});
