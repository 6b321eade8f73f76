import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeFile } from '../../system/deploy/compose.ts';
import { composeEnv } from '../../system/deploy/compose-env.ts';
import { loadApps, repositoryRoot } from '../core/apps.ts';
import { loadSecrets, type StackSecrets } from '../core/secrets.ts';
import { testDataDir, waitFor } from '../core/testing.ts';
import { loadTopology } from '../core/topology.ts';
import { freePort } from './ports.ts';

const entry = join(import.meta.dirname, 'container.ts');
const data = testDataDir();
const dir = join(data.dir, 'container');
let secrets: StackSecrets;
/** The components started, stopped at the end whatever became of their tests. */
const children = new Set<ChildProcess>();
type ComposeService = { command?: string[]; environment: Record<string, string> };

const env = (extra: Record<string, string>) => ({ PATH: process.env.PATH, TASKSTACK_DIR: dir, ...extra });
/** `container.ts ARGS` run to its end: its exit code and output. */
const run = (...args: string[]) =>
  new Promise<{ status: number | string; stdout: string; stderr: string }>((resolve) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', entry, ...args],
      { env: env({ TASKSTACK_TLS_HOSTS: 'identity,keyvault,gateway' }), encoding: 'utf8' },
      (error, stdout, stderr) => resolve({ status: error ? (error.code ?? 1) : 0, stdout, stderr }),
    ),
  );

/** GET over TLS to `address`, checking the certificate against the name `servername` as a compose peer would. */
const get = (address: string, port: number, path: string, servername: string, ca: string) =>
  getText(address, port, path, servername, ca).then((response) => response.status);
const getText = (address: string, port: number, path: string, servername: string, ca: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    request({ host: address, port, path, servername, ca }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk) => {
        body += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });

/** Starts `container.ts <component>` (from `cwd`, as the image's WORKDIR) and waits for its ready line. */
async function startComponent(component: string, extra: Record<string, string>, cwd?: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, component], {
    cwd,
    env: env({
      TASKSTACK_KEYS: Buffer.from(JSON.stringify(secrets)).toString('base64'),
      // Another loopback address stands in for the container's own.
      TASKSTACK_LISTEN: '127.0.0.2',
      ...extra,
    }),
  });
  children.add(child);
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  await waitFor('the ready line', () => output.includes(`${component} ready on port`), 30_000);
  return child;
}

/**
 * Service `name`'s options as docker-compose.yml gives them: what compose does with the env file,
 * `${NAME:?…}` becomes the variable's value.
 */
function composeOptions(name: string): Record<string, unknown> {
  const service = (composeFile(loadTopology(), loadApps()).services as Record<string, ComposeService>)[name];
  expect(service?.command).toEqual([name]);
  const variables = composeEnv(secrets);
  const options = (service?.environment.TASKSTACK_OPTIONS as string).replace(
    /\$\{(\w+):\?[^}]*\}/g,
    (_, variable: string) => variables[variable] ?? `<${variable} missing>`,
  );
  expect(options).not.toContain('missing>');
  return JSON.parse(options);
}

async function stopComponent(running: ChildProcess) {
  const exited = new Promise<number | null>((resolve) => running.once('exit', resolve));
  running.kill('SIGTERM');
  expect(await exited).toBe(0);
}

beforeAll(async () => {
  secrets = await loadSecrets(data.dir, loadTopology());
});
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  data.remove();
});

describe('the container entry (emulators/stack/container.ts)', () => {
  it('init creates the local CA with a certificate naming the compose services', async () => {
    const result = await run('init');
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const stored = JSON.parse(readFileSync(join(dir, 'ca', 'ca.json'), 'utf8'));
    expect(new X509Certificate(stored.cert).subjectAltName).toContain('DNS:identity, DNS:keyvault');
    expect(readFileSync(join(dir, 'ca', 'ca.pem'), 'utf8')).toBe(stored.ca);
  });

  // The tests after init run side by side (the services serve with its CA): each its own process and port.
  it.concurrent('runs one service from its environment, reachable on the given address under its service name', async () => {
    // Key Vault, with the options docker-compose.yml gives it: a TLS service, and one of the lightest to
    // load (the identity provider loads oidc-provider).
    const port = await freePort();
    const running = await startComponent('keyvault', {
      TASKSTACK_OPTIONS: JSON.stringify({ ...composeOptions('keyvault'), port }),
    });
    const ca = readFileSync(join(dir, 'ca', 'ca.pem'), 'utf8');
    // Its answer to a request without a token: the challenge, over TLS checked against the name keyvault.
    expect(await get('127.0.0.2', port, '/secrets?api-version=7.4', 'keyvault', ca)).toBe(401);
    await stopComponent(running);
  });

  it.concurrent('runs the gateway with the options docker-compose.yml gives it, enforcing system/gateway/', async () => {
    const port = await freePort();
    const running = await startComponent(
      'gateway',
      { TASKSTACK_OPTIONS: JSON.stringify({ ...composeOptions('gateway'), port }) },
      repositoryRoot,
    );
    const ca = readFileSync(join(dir, 'ca', 'ca.pem'), 'utf8');
    // No subscription key: API Management's own answer, from the policies and definitions of system/gateway/.
    const answer = await getText('127.0.0.2', port, '/web/api/tasks', 'gateway', ca);
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toEqual({
      statusCode: 401,
      message:
        'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.',
    });
    await stopComponent(running);
  });

  it.concurrent('refuses an unknown component or missing settings with one line', async () => {
    const [unknown, bare] = await Promise.all([run('nonsense'), run('keyvault')]);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr.trim()).toBe('taskstack container: unknown emulator nonsense');
    expect(bare.status).toBe(1);
    expect(bare.stderr.trim()).toBe('taskstack container: TASKSTACK_OPTIONS is not set');
  });
});
