import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout } from 'node:timers/promises';
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

/** Memory of a user's stack (treeMemoryMb). */
type Memory = ReturnType<typeof treeMemoryMb>;

/** A stack `taskstack start` runs as a user runs it (`npm start`), measured phase by phase. */
export interface UserStack {
  /** Milliseconds from spawn to the ready banner (stack.json written). */
  readyMs: number;
  /**
   * The functions host's `ready in` as the launcher prints it: wall clock from the moment what it waits
   * for is ready (blob …) to listening, with whatever of its `load` is still under way. The bench's
   * host row is the host's own account instead (its app's import and `Host started`), as the issue
   * measured it.
   */
  hostReadyMs: number;
  /** The launcher and everything under it, at ready. */
  memory: Memory;
  /**
   * The same after 20 s of rest, and not before `others` is done (whose processes would share pages with
   * these): each process holds its start's garbage until V8's memory reducer comes by, 8–15 s after
   * ready, and is flat after.
   */
  settle(others?: Promise<unknown>): Promise<Memory>;
  /** After `count` requests (createtask and managetask POSTs, alternating) and after as many more: whether it is flat. */
  load(count: number): Promise<{ warm: Memory; end: Memory }>;
  stop(): Promise<void>;
}

/** Spawns `taskstack start` on `dataDir` (with only `components`, if given) and waits for its banner. */
export async function userStack(dataDir: string, components?: string[]): Promise<UserStack> {
  const only = components ? ['--components', components.join(',')] : [];
  const began = performance.now();
  const cli = spawn(
    process.execPath,
    ['emulators/stack/taskstack.mjs', 'start', '--data-dir', dataDir, '--free-ports', ...only],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let seen = '';
  await new Promise<void>((resolve) =>
    cli.stdout.on('data', (chunk: Buffer) => {
      seen += chunk;
      if (seen.includes('taskstack is ready')) resolve();
    }),
  );
  const readyMs = performance.now() - began;
  cli.stdout.removeAllListeners('data').resume();
  const memoryNow = () => treeMemoryMb([cli.pid as number]);
  return {
    readyMs,
    hostReadyMs: Number(/functions +ready in (\d+) ms/.exec(seen)?.[1]),
    memory: memoryNow(),
    settle: async (others) => {
      await Promise.all([setTimeout(20_000), others]);
      return memoryNow();
    },
    load: async (count) => {
      const stack = JSON.parse(readFileSync(join(dataDir, 'stack.json'), 'utf8'));
      const post = httpClient(8, { 'content-type': 'application/json' });
      const call = (i: number) =>
        post(
          `${stack.baseUrl}/api/${i % 2 ? 'managetask' : 'createtask'}?code=${stack.functionKey}`,
          'POST',
          JSON.stringify({ Title: `bench ${i}`, Description: 'load', DueDate: '2030-01-01' }),
        );
      await throughput(count, 8, call);
      const warm = memoryNow();
      await throughput(count, 8, call);
      return { warm, end: memoryNow() };
    },
    stop: async () => {
      const exited = new Promise((resolve) => cli.once('exit', resolve));
      cli.kill('SIGINT');
      await exited;
    },
  };
}

/** The components of the foundation issue (the rest came later): its goals are stated for these. */
export const FOUNDATION = ['identity', 'blob', 'cosmos', 'keyvault'];

/**
 * Stack start to ready on `dataDir` (persisted: keys and CA exist after the first start), and Azurite
 * alone as their baseline; their parts timed apart.
 */
export async function benchStarts(dataDir: string) {
  const startMs = async (components?: string[]) =>
    median(
      await rounds(3, async () => {
        const began = performance.now();
        const stack = await start({ dataDir, ports: 'free', console: false, components });
        const elapsed = performance.now() - began;
        await stack.stop();
        return elapsed;
      }),
    );
  const azuriteMs = await timed('stack warm-up, Azurite alone ×3', async () => {
    await (await start({ dataDir, ports: 'free', console: false })).stop(); // creates keys and CA
    return median(await rounds(3, azuriteAloneMs));
  });
  const starts = await timed('stack starts ×3, foundation ×3', async () => ({
    all: await startMs(),
    foundation: await startMs(FOUNDATION),
  }));
  return { startMs: starts.all, foundationStartMs: starts.foundation, azuriteMs };
}

/** Memory after `npm start` of the foundation alone, on `dataDir` (warm: benchStarts ran on it). */
export const foundationMemory = (dataDir: string) =>
  timed('`npm start` foundation', async () => {
    const foundation = await userStack(dataDir, FOUNDATION);
    await foundation.stop();
    return foundation.memory;
  });
