import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout } from 'node:timers/promises';
import { testDataDir } from '../emulators/core/testing.ts';
import { start } from '../emulators/stack/launcher.ts';
import { httpClient, median, rounds, throughput, timed, treeMemoryMb } from './measure.ts';

/** Baseline: Azurite's blob service alone, from spawn to listening (the slowest single part). */
function azuriteAloneMs(): Promise<number> {
  const main = createRequire(import.meta.url).resolve('azurite/dist/src/blob/main.js');
  const began = performance.now();
  const child = spawn(process.execPath, [
    main,
    '--blobPort',
    '0',
    '--inMemoryPersistence',
    '--skipApiVersionCheck',
    '--disableTelemetry',
    '--silent',
  ]);
  return new Promise((resolve) =>
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('successfully listens')) {
        resolve(performance.now() - began);
        child.kill();
      }
    }),
  );
}

/**
 * `taskstack start` as a user runs it (`npm start`): milliseconds from spawn to stack.json, and the memory
 * of the launcher and everything under it at ready (with `settle`, 20 s later too) — and,
 * with `load`, again after `load` requests (createtask and managetask POSTs, alternating) and after as
 * many more, to show whether it is flat.
 */
async function cliRun(
  dataDir: string,
  options: { components?: string[]; load?: number; settle?: boolean } = {},
) {
  const only = options.components ? ['--components', options.components.join(',')] : [];
  const began = performance.now();
  const cli = spawn(
    process.execPath,
    ['emulators/stack/taskstack.mjs', 'start', '--data-dir', dataDir, '--free-ports', ...only],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve) =>
    cli.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('taskstack is ready') && resolve()),
  );
  const readyMs = performance.now() - began;
  const memory = treeMemoryMb([cli.pid as number]);
  // Each process still holds the garbage of its start until V8's memory reducer comes by, 8–15 s later.
  let settled: ReturnType<typeof treeMemoryMb> | undefined;
  if (options.settle) {
    await setTimeout(20_000);
    settled = treeMemoryMb([cli.pid as number]);
  }
  let loaded: { warm: { rss: number; pss: number }; end: { rss: number; pss: number } } | undefined;
  if (options.load) {
    const stack = JSON.parse(readFileSync(join(dataDir, 'stack.json'), 'utf8'));
    const post = httpClient(8, { 'content-type': 'application/json' });
    const call = (i: number) =>
      post(
        `${stack.baseUrl}/api/${i % 2 ? 'managetask' : 'createtask'}?code=${stack.functionKey}`,
        'POST',
        JSON.stringify({ Title: `bench ${i}`, Description: 'load', DueDate: '2030-01-01' }),
      );
    await throughput(options.load, 8, call);
    const warm = treeMemoryMb([cli.pid as number]);
    await throughput(options.load, 8, call);
    loaded = { warm, end: treeMemoryMb([cli.pid as number]) };
  }
  const exited = new Promise((resolve) => cli.once('exit', resolve));
  cli.kill('SIGINT');
  await exited;
  return { readyMs, memory, settled, loaded };
}

/** The components of the foundation issue (the rest came later): its goals are stated for these. */
export const FOUNDATION = ['identity', 'blob', 'cosmos', 'keyvault'];

/**
 * Stack start to ready (persisted data directory, warm: keys and CA exist), and memory after start; its
 * parts timed apart.
 */
export async function benchStack() {
  const data = testDataDir();
  try {
    const startMs = async (components?: string[]) =>
      median(
        await rounds(3, async () => {
          const began = performance.now();
          const stack = await start({ dataDir: data.dir, ports: 'free', console: false, components });
          const elapsed = performance.now() - began;
          await stack.stop();
          return elapsed;
        }),
      );
    const azuriteMs = await timed('stack warm-up, Azurite alone ×3', async () => {
      await (await start({ dataDir: data.dir, ports: 'free', console: false })).stop(); // creates keys and CA
      return median(await rounds(3, azuriteAloneMs));
    });
    const fresh = testDataDir();
    const user = await timed('`npm start` + 10,000 requests', () =>
      cliRun(fresh.dir, { load: 5000, settle: true }).finally(fresh.remove),
    );
    const starts = await timed('stack starts ×3, foundation ×3', async () => ({
      all: await startMs(),
      foundation: await startMs(FOUNDATION),
    }));
    const foundationMemory = await timed(
      '`npm start` foundation',
      async () => (await cliRun(data.dir, { components: FOUNDATION })).memory,
    );
    return {
      startMs: starts.all,
      foundationStartMs: starts.foundation,
      azuriteMs,
      /** `npm start` on a fresh data directory (CA and keys created) to stack.json. */
      userStartMs: user.readyMs,
      memory: user.memory,
      memorySettled: user.settled,
      afterLoad: user.loaded,
      foundationMemory,
    };
  } finally {
    data.remove();
  }
}
