/** Helpers for tests that start one emulator in the test's own process, on a free port. */
import { createHash, X509Certificate } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadTls, type TlsMaterial } from './ca.ts';
import { StackClock } from './clock.ts';
import type { EmulatorContext, RunningEmulator } from './emulator.ts';
import { loadSecrets, type StackSecrets } from './secrets.ts';
import { loadTopology } from './topology.ts';

/**
 * A fresh data directory holding the test run's CA (which the test process already trusts through
 * NODE_EXTRA_CA_CERTS, set by vitest.config.ts) and its identity signing key: an RSA key costs ~120 ms
 * of CPU to make, and the suite makes ~70 data directories. Every other key is the directory's own.
 * Returns the path and a function that removes it.
 */
export function testDataDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'taskstack-'));
  const shared = process.env.TASKSTACK_TEST_SHARED_DIR;
  if (shared) {
    cpSync(join(shared, 'ca'), join(dir, 'ca'), { recursive: true });
    const { signingKey } = JSON.parse(readFileSync(join(shared, 'keys.json'), 'utf8'));
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ signingKey }), { mode: 0o600 });
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The context the launcher would give a component, built from a data directory; its secrets hold the
 * signing key (the identity provider's), which tests sign tokens with.
 */
export async function testContext(
  dataDir: string,
  opts: { inMemory?: boolean } = {},
): Promise<EmulatorContext & { secrets: StackSecrets }> {
  const topology = loadTopology();
  return {
    stateDir: opts.inMemory ? undefined : join(dataDir, 'state'),
    tls: await loadTls(dataDir),
    secrets: await loadSecrets(dataDir, topology),
    topology,
    clock: new StackClock(),
    log: () => {},
    crash: (reason) => {
      throw new Error(`component crashed: ${reason}`);
    },
  };
}

/** A test's context: the launcher's, with every key the data directory holds. */
export type TestContext = Awaited<ReturnType<typeof testContext>>;

/** Starts an emulator in this process with checked options. */
export { startEmulator } from './emulator.ts';

/**
 * A GET sent with node:https, for what fetch refuses to send (headers beyond its own limits);
 * answers the status and the body as text.
 */
export function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, maxHeaderSize: 256 * 1024 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The one identity endpoint a test process may use: MSAL keeps the first it finds for the process's life. */
const IDENTITY_ENDPOINT = Symbol.for('taskstack.test.identityEndpoint');

/**
 * Sets the managed-identity environment that @azure/identity reads when a credential is built (as App
 * Service gives it to an app); returns a function that puts back what was there before. MSAL binds a
 * process to the first endpoint it sees, as an app has one for its life: a test file that uses this
 * runs in a process of its own (vitest.config.ts, OWN_PROCESS), which this checks.
 */
export function useManagedIdentityEnv(endpoint: string, header: string | undefined): () => void {
  const slot = globalThis as { [IDENTITY_ENDPOINT]?: string };
  const bound = slot[IDENTITY_ENDPOINT];
  if (bound !== undefined && bound !== endpoint)
    throw new Error(
      `this test process already used the identity endpoint ${bound}, and MSAL keeps it: list this test file in OWN_PROCESS (vitest.config.ts)`,
    );
  slot[IDENTITY_ENDPOINT] = endpoint;
  const saved = {
    IDENTITY_ENDPOINT: process.env.IDENTITY_ENDPOINT,
    IDENTITY_HEADER: process.env.IDENTITY_HEADER,
  };
  const set = (name: keyof typeof saved, value: string | undefined) => {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  };
  set('IDENTITY_ENDPOINT', endpoint);
  set('IDENTITY_HEADER', header);
  return () => {
    for (const [name, value] of Object.entries(saved)) set(name as keyof typeof saved, value);
  };
}

/** useManagedIdentityEnv as App Service sets it for `app`, at an identity emulator started in-process. */
export const useAppIdentityEnv = (idp: RunningEmulator, context: TestContext, app: string): (() => void) =>
  useManagedIdentityEnv(idp.endpoints.identityEndpoint as string, context.secrets.identities[app]?.header);

/**
 * Polls `probe` until it returns a value other than undefined/false, or fails after `timeoutMs`. While it
 * waits, `nudge` (if any) runs at once and then at most once every `nudgeEveryMs`: something that brings
 * the awaited state sooner, such as moving the stack clock past a poll delay.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
  nudge?: () => Promise<unknown>,
  nudgeEveryMs = 1_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let nextNudge = 0;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    if (nudge && Date.now() >= nextNudge) {
      nextNudge = Date.now() + nudgeEveryMs;
      await nudge();
    } else await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Python tools that import distutils at every start (az before 2.60, docker-compose 1.x) get the whole
 * of setuptools from Debian's shim (python3-setuptools), ~0.35 s of CPU a start; Python's own distutils
 * costs nothing, and anyone can choose it with this setting. Python 3.12 has none of its own: a tool
 * run with the setting there fails saying so (`lacksDistutils`), and runs again without it.
 */
export const OWN_DISTUTILS: Readonly<Record<string, string>> = { SETUPTOOLS_USE_DISTUTILS: 'stdlib' };
export const lacksDistutils = (stderr: string) => stderr.includes("No module named 'distutils'");

/**
 * Debian's chromium through playwright-core: headless, no sandbox, a fresh profile. Chromium ignores
 * NODE_EXTRA_CA_CERTS, so, given the stack's TLS material, it is told to accept the certificate that
 * carries the stack's server key (by its SPKI hash) and no other; every other certificate is still
 * verified as usual. Without it (pages over plain HTTP), every certificate is verified as usual.
 */
export async function launchChromium(tls?: Pick<TlsMaterial, 'cert'>) {
  // Loaded on demand: most tests never open a browser.
  const { chromium } = await import('playwright-core');
  const args = ['--no-sandbox'];
  if (tls) {
    const spki = new X509Certificate(tls.cert).publicKey.export({ type: 'spki', format: 'der' });
    args.push(`--ignore-certificate-errors-spki-list=${createHash('sha256').update(spki).digest('base64')}`);
  }
  return chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args });
}
