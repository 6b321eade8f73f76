/**
 * `taskstack conformance` and `taskstack scenario run` as a user meets them with a target file written
 * by hand: no stack of ours behind it.
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTls } from '../emulators/core/ca.ts';
import { testDataDir } from '../emulators/core/testing.ts';
import {
  commandLineOf,
  descendants,
  runCli,
  runNode,
  withoutTestCa,
} from '../emulators/stack/test-support.ts';

const VITEST = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
const TABLE_TEST = fileURLToPath(new URL('./table.test.ts', import.meta.url));

import { ANSWER_TIMEOUT_ENV, readTarget, TARGET_ENV } from './target.ts';

describe('a target written by hand', () => {
  const data = testDataDir();
  /** Accepts connections and never answers: a target behind a firewall that drops, or a hung server. */
  let silent: Server;
  const sockets: Socket[] = [];
  let silentUrl = '';

  beforeAll(async () => {
    silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    data.remove();
  });

  const write = (name: string, description: unknown) => {
    const file = join(data.dir, name);
    writeFileSync(file, JSON.stringify(description));
    return file;
  };
  // In a shell without the test run's CA: no target here is signed by it (withoutTestCa).
  const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    runCli(args, { ...withoutTestCa(process.env), [TARGET_ENV]: '', TASKSTACK_DATA_DIR: data.dir, ...env });
  /**
   * The command lines of this process's children (the CLI and its script), taken as each request waits:
   * every request's, as a run beside the one checked may ask last.
   */
  let asked: string[] = [];
  const noteCommands = () => {
    asked.push(...descendants(process.pid).flatMap((pid) => commandLineOf(pid) ?? []));
  };
  /** The script ran from its bundle, as the CLI itself does: under tsx each run cost ~0.85 s of CPU. */
  const expectBundled = (bundleName: string) => {
    const commands = asked.join('\n');
    expect(commands).toMatch(new RegExp(`/bundles/${bundleName}\\.ts\\.packed/[\\w-]+/main\\.mjs `));
    expect(commands).not.toContain('--import');
  };

  // The runs against targets that never answer or name nothing usable go side by side: they note no
  // commands, and each reads only its own output.
  it.concurrent.each([
    [['conformance'], /^FAIL .*createtask: no body .* no answer from (\S+) within 0\.2 s$/m],
    [
      ['scenario', 'run', 'attachment-metadata'],
      /^FAIL {2}attachment-metadata .*no answer from (\S+) within 0\.2 s$/m,
    ],
  ])(
    '%s against a target that never answers: each check fails naming it, in bounded time, exit 1',
    async (args, line) => {
      const file = write('silent.json', { baseUrl: silentUrl, functionKey: 'k', webBaseUrl: silentUrl });
      const result = await run([...args, '--target', file], { [ANSWER_TIMEOUT_ENV]: '200' });
      expect(result.stderr).toBe('');
      expect(result.stdout.match(line)?.[1]).toBe(silentUrl);
      expect(result.stdout).not.toMatch(/^PASS/m);
      expect(result.status).toBe(1);
    },
    60_000,
  );

  const nothing = () =>
    write('nothing.json', {
      authUrl: 'https://login.microsoftonline.com',
      logs: { functions: 'functions.log' },
    });

  it.concurrent('conformance against a target naming nothing it can use: exit 1, saying nothing ran; it names the Errors-table rows no target can show, and where they are checked', async () => {
    const result = await run(['conformance', '--target', nothing()]);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(
      /^0 passed, 0 failed, \d+ skipped \(target .*\)\nnothing ran: every check needs a field .*nothing\.json lacks/m,
    );
    expect(result.status).toBe(1);
    const elsewhere =
      'needs a function app whose storage is broken; checked by system/functions/storage-failures.test.ts';
    for (const name of [
      'uploadattachment: StorageConnection missing or empty → 500 (empty)',
      'uploadattachment: any other failure → 500 "Error uploading file: …"',
      'getattachment: StorageConnection missing or empty → 500 (empty)',
      'getattachment: any other failure → 500 "Error retrieving file metadata: …"',
    ])
      expect(result.stdout).toMatch(new RegExp(`^SKIP  500  ${literal(name)} +${literal(elsewhere)}$`, 'm'));
  });

  it.concurrent.each([
    [
      ['scenario', 'run', 'all'],
      /^SKIP {2}key-renewal .*\nnothing ran: every check needs a field .*nothing\.json lacks/m,
    ],
    // The target has fields, none of them the scenario's.
    [
      ['scenario', 'run', 'key-renewal'],
      /^SKIP {2}key-renewal +target has no baseUrl, functionKey, controlUrl, masterKey\nnothing ran: every check needs a field .*nothing\.json lacks/m,
    ],
  ])('%s against a target naming nothing it can use: exit 1, saying nothing ran', async (args, line) => {
    const result = await run([...args, '--target', nothing()]);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(line);
    expect(result.status).toBe(1);
  });

  // Beside the runs above (vitest runs adjacent concurrent tests together): they note no commands, and
  // the commands it reads are the bundled scripts' and the suite's, none with `--import`.
  it.concurrent('an https target signed by a CA this machine does not trust: the failure says how to trust it, and the dataDir fix works', async () => {
    // A stack's data directory of its own, with a CA the test processes do not trust.
    const dataDir = join(data.dir, 'other-stack');
    mkdirSync(dataDir);
    const tls = await loadTls(dataDir, ['127.0.0.1']);
    const server = createHttpsServer({ cert: tls.cert, key: tls.key }, (_, response) => {
      noteCommands();
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const gatewayUrl = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      asked = [];
      const untrusted = write('untrusted.json', { gatewayUrl, subscriptionKey: 'k' });
      const trusted = write('trusted.json', { gatewayUrl, subscriptionKey: 'k', dataDir });
      // Side by side: the untrusted run's request never reaches the server; the trusted run's and the
      // suite's do (the suite's processes run no script, and none with `--import`).
      const [refused, answered, suite] = await Promise.all([
        run(['conformance', '--target', untrusted]),
        run(['conformance', '--target', trusted]),
        // TASKSTACK_TARGET_FILE=FILE npm test: the test processes trust the target's CA as well.
        runNode([VITEST, 'run', TABLE_TEST], { ...process.env, [TARGET_ENV]: trusted }),
      ]);
      const suiteSaid = `${suite.stdout}${suite.stderr}`;
      // Node's own words, then ours (Node 24 adds a hint of its own between them).
      expect(refused.stdout).toMatch(
        /^FAIL .* fetch failed: unable to verify the first certificate(; [^(]*)? \(a local stack’s CA: give the target its dataDir, or set NODE_EXTRA_CA_CERTS=<data dir>\/ca\/ca\.pem\)$/m,
      );
      expect(answered.stdout).toMatch(/^FAIL .* status 200, expected 401/m);
      expect(answered.stdout).not.toContain('certificate');
      expectBundled('contracts__conformance');
      expect(suiteSaid).toMatch(/^FAIL .* status 200, expected 401/m);
      expect(suiteSaid).not.toContain('certificate');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('addresses are taken with or without a trailing slash, as users copy them from a portal', () => {
    const file = write('slashes.json', {
      baseUrl: 'https://tasks.azurewebsites.net/',
      webBaseUrl: 'http://127.0.0.1:3000//',
      gatewayUrl: 'https://tasks.azure-api.net',
      apps: { 'web-b': { url: 'http://127.0.0.1:3001/' } },
    });
    expect(readTarget(file)).toEqual({
      baseUrl: 'https://tasks.azurewebsites.net',
      webBaseUrl: 'http://127.0.0.1:3000',
      gatewayUrl: 'https://tasks.azure-api.net',
      webBBaseUrl: 'http://127.0.0.1:3001',
    });
  });

  it('scenario run: a step answered with another status says which, what was expected and the body', async () => {
    const refusing = createHttpServer((_, response) => {
      noteCommands();
      response.writeHead(401).end();
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    try {
      asked = [];
      const baseUrl = `http://127.0.0.1:${(refusing.address() as { port: number }).port}`;
      const file = write('refusing.json', { baseUrl, functionKey: 'wrong' });
      const result = await run(['scenario', 'run', 'attachment-metadata', '--target', file]);
      expect(result.stdout).toMatch(
        /^FAIL {2}attachment-metadata {2}uploadattachment: status 401, expected 200; body ""$/m,
      );
      expect(result.status).toBe(1);
      expectBundled('scenarios__run');
    } finally {
      await new Promise((resolve) => refusing.close(resolve));
    }
  });

  it('a target file written with a byte-order mark (PowerShell 5’s Out-File, Notepad) is read', () => {
    const file = join(data.dir, 'bom.json');
    writeFileSync(file, `\ufeff${JSON.stringify({ baseUrl: 'https://tasks.azurewebsites.net' })}`);
    expect(readTarget(file)).toEqual({ baseUrl: 'https://tasks.azurewebsites.net' });
  });

  it.each([
    [[{ baseUrl: 'http://127.0.0.1:7071' }], ' is not a JSON object'],
    [{ baseURL: 'http://127.0.0.1:7071' }, ': baseURL is not a target field: did you mean baseUrl?'],
    [{ functionkey: 'k' }, ': functionkey is not a target field: did you mean functionKey?'],
    [{ baseUrl: 7071 }, ': baseUrl must be a string, not 7071'],
    [{ subscriptionKey: ['a'] }, ': subscriptionKey must be a string, not ["a"]'],
    [{ gatewayUrl: '127.0.0.1:8080' }, ': gatewayUrl must be an http or https URL, not "127.0.0.1:8080"'],
    [
      { baseUrl: 'https://tasks.azurewebsites.net/api/createtask?code=k' },
      ': baseUrl must be the app’s address, without a query or fragment (the rows add paths and the key), not "https://tasks.azurewebsites.net/api/createtask?code=k"',
    ],
    [{ webBaseUrl: 'http://[::1' }, ': webBaseUrl must be an http or https URL, not "http://[::1"'],
  ])('a target file %j is refused: target FILE%s', (description, reason) => {
    const file = write('refused.json', description);
    expect(() => readTarget(file)).toThrow(`target ${file}${reason}`);
  });
});

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
