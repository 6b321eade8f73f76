/** Helpers for tests that start one emulator in the test's own process, on a free port. */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadTls } from './ca.ts';
import { StackClock } from './clock.ts';
import type { Emulator, EmulatorContext, RunningEmulator } from './emulator.ts';
import { loadSecrets } from './secrets.ts';
import { loadTopology } from './topology.ts';

/**
 * A fresh data directory holding the test run's CA (which the test process already trusts through
 * NODE_EXTRA_CA_CERTS, set by vitest.config.ts). Returns the path and a function that removes it.
 */
export function testDataDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'taskstack-'));
  const shared = process.env.TASKSTACK_TEST_CA_DIR;
  if (shared) cpSync(join(shared, 'ca'), join(dir, 'ca'), { recursive: true });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The context the launcher would give a component, built from a data directory. */
export async function testContext(
  dataDir: string,
  opts: { inMemory?: boolean } = {},
): Promise<EmulatorContext> {
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

/** Starts an emulator in this process with checked options. */
export async function startEmulator<E extends Emulator>(
  emulator: E,
  options: unknown,
  context: EmulatorContext,
): Promise<RunningEmulator> {
  return emulator.start(emulator.options.parse(options), context);
}

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
