/**
 * The web app under test, run as App Service runs it: built, then `node dist/server.js` in its own
 * process with the app settings as environment variables and PORT (HOST keeps it on loopback).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expectDocumented } from '../../contracts/validate.ts';
import { waitFor } from '../../emulators/core/testing.ts';
import { buildAppIfChanged } from '../../emulators/stack/build-app.ts';
import { start } from '../../emulators/stack/launcher.ts';
import { freePort } from '../functions/test-support.ts';

const appDir = fileURLToPath(new URL('.', import.meta.url));

/**
 * The answers' texts of README.md's table, spelled out here rather than imported from the app's
 * sources: a test comparing an answer with the app's own constant cannot notice that the text changed.
 */
export const TEXTS = {
  TITLE_REQUIRED: 'Title is required.',
  NOT_JSON: 'Request body is not valid JSON.',
  NOT_AN_OBJECT: 'Request body must be a JSON object.',
  WRONG_TYPE: 'title, description and dueDate must be strings.',
  TOO_MANY_FIELDS: 'Too many form fields: the limit is 1024.',
  SIGN_IN_FAILED: 'Sign-in could not be completed. Start again from the home page.',
  SIGN_IN_REQUIRED: 'Sign-in required.',
  BAD_FORM_TOKEN: 'The form has expired or was not sent by this site. Reload the page and try again.',
  NOT_FOUND: 'Not found.',
  TOO_LARGE: 'Request too large: the limit is 1048576 bytes.',
  JSON_ONLY: 'Content-Type must be application/json.',
  JSON_CHARSET: 'Content-Type charset must be utf-8 or utf-16.',
  FORM_CHARSET: 'Content-Type charset must be utf-8 or iso-8859-1.',
  STORE_UNAVAILABLE: 'The task store is unavailable. Try again later.',
  SIGN_IN_UNAVAILABLE: 'The sign-in service is unavailable. Try again later.',
  PROFILE_UNAVAILABLE: 'The directory profile is unavailable. Try again later.',
  INTERNAL: 'Internal server error.',
} as const;

/** The stores a web app test runs against: those `components` of the stack, in memory, on free ports, quiet. */
export const startStores = (dataDir: string, components: string[]) =>
  start({ dataDir, ports: 'free', console: false, inMemory: true, components });

export interface WebApp {
  url: string;
  /** Everything the app wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves once the output has a line containing `text`. */
  waitForOutput(text: string, timeoutMs?: number): Promise<void>;
  /** The process is still running. */
  running(): boolean;
  stop(): Promise<void>;
}

let built: Promise<unknown> | undefined;

/**
 * Starts the app with exactly these settings (no others from the test's environment), on `port` when
 * given (a sign-in test registers the redirect URI before the app starts).
 */
export async function startWebApp(settings: Record<string, string>, port?: number): Promise<WebApp> {
  // As the launcher builds it: skipped while nothing the last build read has changed.
  built ??= buildAppIfChanged(appDir, 'build.ts');
  await built;
  port ??= await freePort();
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: appDir,
    env: {
      PATH: process.env.PATH,
      // The stack's CA, as the launcher gives it to every process (vitest.config.ts sets it for tests).
      NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS,
      ...settings,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const app: WebApp = {
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    async waitForOutput(text, timeoutMs = 20_000) {
      await waitFor(`"${text}" in the web app's output`, () => output.includes(text), timeoutMs).catch(
        (error: Error) => {
          throw new Error(`${error.message}; output so far:\n${output}`);
        },
      );
    },
    running,
    async stop() {
      if (running()) child.kill('SIGTERM');
      await exited;
    },
  };
  await waitFor(
    'the web app to listen or exit',
    () => output.includes('listening on port') || !running(),
    20_000,
  );
  if (!running()) {
    await exited;
    throw new Error(`the web app exited at start: ${output.trim()}`);
  }
  return app;
}

/** POSTs JSON (text, or bytes as sent) to the task API; the answer must be documented in openapi/web.json. */
export async function postJson(
  url: string,
  body: string | Buffer<ArrayBuffer>,
  contentType = 'application/json',
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${url}/api/tasks`, {
    method: 'POST',
    headers: { 'content-type': contentType, ...headers },
    body,
  });
  await expectDocumented('web', 'post', '/api/tasks', response.clone());
  return response;
}

/** GET /api/tasks; the answer must be documented in openapi/web.json. */
export async function getTasks(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/api/tasks`, { headers });
  await expectDocumented('web', 'get', '/api/tasks', response.clone());
  return response;
}
