import { type ChildProcessByStdio, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lacksDistutils, OWN_DISTUTILS, testDataDir } from '../core/testing.ts';
import { type Stack, start } from '../stack/launcher.ts';

/**
 * Blob storage as a user reaches it with Microsoft's own CLI (Debian's azure-cli, installed by .ci/run):
 * the stack's connection string, and the account name, key and endpoint given one by one.
 */
const data = testDataDir();
/**
 * az's configuration lives beside the test run's CA (vitest.config.ts) from one run to the next, as a
 * user's ~/.azure does: az builds its command index on a configuration's first use (it loads every
 * command module, ~2 s of CPU), and again only for another version of az.
 */
const config = join(process.env.TASKSTACK_TEST_SHARED_DIR ?? data.dir, 'az');
/** az before 2.60 imports distutils at every start (see OWN_DISTUTILS; warmUp finds whether Python has its own). */
let ownDistutils: Readonly<Record<string, string>> = OWN_DISTUTILS;
let stack: Stack;
let connection: string;
/** The discard port: a proxy there refuses at once, and nothing sent to it leaves the machine. */
const DEAD_PROXY = 'http://127.0.0.1:9';

type AzResult = { code: number | string; stdout: string; stderr: string };

/** az's environment: a configuration of its own (made by az in `config`), no telemetry, loopback only. */
function azEnv(): NodeJS.ProcessEnv {
  // Nothing of the user's environment may choose the account or a proxy instead of the arguments.
  const inherited = Object.entries(process.env).filter(
    ([name]) => !name.startsWith('AZURE_') && !name.toLowerCase().endsWith('_proxy'),
  );
  // Loopback only: a fresh configuration makes az ask azure.microsoft.com and GitHub for its latest
  // version, so every request but the stack's goes to a proxy on a loopback port nothing serves.
  const loopbackOnly = { http_proxy: DEAD_PROXY, https_proxy: DEAD_PROXY, no_proxy: '127.0.0.1' };
  return {
    ...Object.fromEntries(inherited),
    ...loopbackOnly,
    ...ownDistutils,
    AZURE_CONFIG_DIR: config,
    AZURE_CORE_COLLECT_TELEMETRY: 'false',
    AZURE_CORE_NO_COLOR: 'true',
  };
}

/** Runs `az … -o json` as a user does, a process of its own; answers its exit code (or why it did not run: ENOENT, a signal) and output. */
function az(...args: string[]): Promise<AzResult> {
  return new Promise((resolve) => {
    execFile(
      'az',
      [...args, '-o', 'json'],
      // az retries a refused connection for over a minute: a stack that stops answering fails sooner.
      { env: azEnv(), timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (error.code ?? String(error.signal)) : 0, stdout, stderr }),
    );
  });
}

/** The Python that runs az (its script's `#!` line, as Debian's `/usr/bin/az` has it). */
function azPython(): string {
  const script = (process.env.PATH ?? '')
    .split(delimiter)
    .map((dir) => join(dir, 'az'))
    .find((path) => existsSync(path));
  const shebang = script
    ? /^#!(\S*python\S*)\s*$/m.exec(readFileSync(script, 'utf8').split('\n')[0] ?? '')
    : null;
  return shebang?.[1] ?? 'python3';
}

/**
 * az commands run one after another in one Python process (`az-session.py`), as az's own scenario tests
 * run theirs: each costs ~0.1 s of CPU there, against ~1.2 s for a process of its own (Python and az's
 * storage modules loaded again). Answers as `az` does.
 */
function azSession() {
  const child: ChildProcessByStdio<Writable, Readable, null> = spawn(
    azPython(),
    [join(import.meta.dirname, 'az-session.py')],
    { env: azEnv(), stdio: ['pipe', 'pipe', 'inherit'] },
  );
  // A Python that cannot start, or that ended, ends the answers: the command waiting for one fails.
  child.on('error', () => {});
  child.stdin.on('error', () => {});
  const answers = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let last: Promise<unknown> = Promise.resolve();
  return {
    run(...args: string[]): Promise<AzResult> {
      const ran = last.then(async () => {
        child.stdin.write(`${JSON.stringify([...args, '-o', 'json'])}\n`);
        const { value, done } = await answers.next();
        if (done) throw new Error(`az's session ended (exit code ${child.exitCode})`);
        return JSON.parse(value) as AzResult;
      });
      last = ran.catch(() => {});
      return ran;
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
      }),
  };
}
let session: ReturnType<typeof azSession>;

/** `az …` that must succeed (in the session): its JSON output. */
async function azJson(...args: string[]): Promise<unknown> {
  const result = await session.run(...args);
  expect(result.stderr, `az ${args.slice(0, 4).join(' ')}`).toBe('');
  expect(result.code).toBe(0);
  return result.stdout.trim() ? JSON.parse(result.stdout) : undefined;
}

/**
 * A first call, while the stack starts: it builds the command index where there is none or az has
 * changed (the tests' calls, side by side, then only read it), and finds whether Python has distutils.
 */
async function warmUp() {
  const first = await az('storage', '--help');
  if (!lacksDistutils(first.stderr)) return first;
  ownDistutils = {};
  return az('storage', '--help');
}

beforeAll(async () => {
  const [started, indexed] = await Promise.all([
    start({ dataDir: data.dir, ports: 'free', console: false, components: ['blob'] }),
    // The session starts once the index is built (its commands only read it), beside the stack's start.
    warmUp().then((first) => {
      session = azSession();
      return first;
    }),
  ]);
  stack = started;
  expect(indexed.code, indexed.stderr).toBe(0);
  connection = stack.description.connections.StorageConnection as string;
});
afterAll(async () => {
  await session?.close();
  await stack?.stop();
  data.remove();
});

// The wrong-key check, a process of its own (az's exit code and message as a user sees them), runs beside
// the session's commands.
describe('blob storage through az storage', () => {
  // Two concurrent suites run side by side (one concurrent suite would run a sequential one inside it
  // before its own tests).
  describe.concurrent('a blob', () => {
    describe.sequential('uploaded, then downloaded and deleted', () => {
      it("creates a container, uploads with content type and metadata, and lists with stack.json's connection string", async () => {
        const withConnection = ['--connection-string', connection];
        expect(await azJson('storage', 'container', 'create', '-n', 'scratch', ...withConnection)).toEqual({
          created: true,
        });
        const file = join(data.dir, 'notes.txt');
        writeFileSync(file, 'hello from az');
        const blob = ['-c', 'scratch', '-n', 't-1/notes.txt'];
        const upload = [
          '-f',
          file,
          '--no-progress',
          '--content-type',
          'text/plain',
          '--metadata',
          'TaskId=t-1',
        ];
        await azJson('storage', 'blob', 'upload', ...blob, ...upload, ...withConnection);

        const [containers, blobs] = await Promise.all([
          azJson('storage', 'container', 'list', '--query', '[].name', ...withConnection),
          azJson('storage', 'blob', 'list', '-c', 'scratch', '--include', 'm', ...withConnection),
        ]);
        // The topology's containers are there from the start, beside the new one.
        expect(containers).toEqual(['attachments', 'scratch', 'tasks']);
        expect(blobs).toMatchObject([
          {
            name: 't-1/notes.txt',
            metadata: { TaskId: 't-1' },
            properties: { contentLength: 13, contentSettings: { contentType: 'text/plain' } },
          },
        ]);
      });

      it('downloads, shows metadata and deletes with --account-name, --account-key and --blob-endpoint', async () => {
        const key = /AccountKey=([^;]+)/.exec(connection)?.[1] as string;
        const account = ['--account-name', 'devstoreaccount1', '--account-key', key];
        const endpoint = ['--blob-endpoint', stack.description.endpoints.blob?.blob as string];
        const blob = ['-c', 'scratch', '-n', 't-1/notes.txt', ...account, ...endpoint];
        const downloaded = join(data.dir, 'downloaded.txt');
        const [, metadata] = await Promise.all([
          azJson('storage', 'blob', 'download', ...blob, '-f', downloaded, '--no-progress'),
          azJson('storage', 'blob', 'metadata', 'show', ...blob),
        ]);
        expect(readFileSync(downloaded, 'utf8')).toBe('hello from az');
        expect(metadata).toEqual({ TaskId: 't-1' });

        await azJson('storage', 'blob', 'delete', ...blob);
        expect(await azJson('storage', 'blob', 'list', '-c', 'scratch', ...account, ...endpoint)).toEqual([]);
      });
    });
  });

  describe.concurrent('a wrong key', () => {
    it("says a wrong account key is an authentication failure, as az says of Azure's", async () => {
      const wrong = connection.replace(
        /AccountKey=[^;]+/,
        `AccountKey=${Buffer.alloc(64).toString('base64')}`,
      );
      const result = await az('storage', 'container', 'list', '--connection-string', wrong);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(
        'Authentication failure. This may be caused by either invalid account key, connection string or sas token value provided for your storage account.',
      );
    });
  });
});
