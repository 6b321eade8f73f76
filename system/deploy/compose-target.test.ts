import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadApps, repositoryRoot } from '../../emulators/core/apps.ts';
import { loadSecrets } from '../../emulators/core/secrets.ts';
import { testDataDir } from '../../emulators/core/testing.ts';
import { loadTopology } from '../../emulators/core/topology.ts';
import { runNode } from '../../emulators/stack/test-support.ts';
import { composeTargetFile } from './compose.ts';

const home = testDataDir();
afterAll(() => home.remove());

/** No engine: DOCKER_HOST names a closed loopback port (and this machine has no Docker socket). */
const noDocker = { PATH: process.env.PATH, HOME: home.dir, DOCKER_HOST: 'tcp://127.0.0.1:1' };
/** A TypeScript file or `-e` code run under tsx, as a user runs the script; not blocking, as the tests run side by side. */
const tsx = (...args: string[]) => runNode(['--import', 'tsx', ...args], noDocker, { cwd: repositoryRoot });
const LINE =
  /^taskstack compose: TASKSTACK_TARGET=compose needs a reachable Docker engine, and there is none \(.+\); nothing was run\.$/;

// Each test runs its own process and reads only its output: side by side.
describe.concurrent('compose mode without a Docker engine', () => {
  it('compose-target.ts stops at once with one line and a failing exit code', async () => {
    const result = await tsx(join('system', 'deploy', 'compose-target.ts'));
    expect(result.stdout).toBe('');
    expect(result.stderr.trim()).toMatch(LINE);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.status).toBe(1);
  });

  it("the test run's global setup stops it the same way, before any test", async () => {
    const result = await tsx(
      '-e',
      "import('./system/deploy/compose-setup.ts').then((m) => m.default()).then(() => console.log('PASS'))",
    );
    expect(result.stdout).toBe('');
    expect(result.stderr.trim()).toMatch(LINE);
    expect(result.status).toBe(1);
  });
});

describe('the compose target file', () => {
  it("names the spec's four addresses on the published ports, each app's address and the stack's keys", async () => {
    const topology = loadTopology();
    const apps = loadApps();
    const secrets = await loadSecrets(home.dir, topology);
    const target = composeTargetFile(topology, apps, secrets);
    const url = (app: string) => `http://127.0.0.1:${apps[app]?.localPort}`;
    expect(target).toEqual({
      target: 'compose',
      baseUrl: url('functions'),
      webBaseUrl: url('web'),
      gatewayUrl: 'https://127.0.0.1:8600',
      portalUrl: 'https://127.0.0.1:8600/developer',
      authUrl: 'https://127.0.0.1:8400',
      subscriptionKey: secrets.subscriptionKey,
      apps: Object.fromEntries(Object.keys(apps).map((app) => [app, { url: url(app) }])),
      secrets: { EncryptionKey: secrets.encryptionKey },
    });
  });
});
