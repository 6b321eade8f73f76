/**
 * The functions host's benchmark: start time for an app (as the host reports it: from `start` to
 * listening with every listener up, the host's own modules already loaded), and requests per second of
 * a trivial anonymous HTTP function through the host against the same handler in bare node:http. Both
 * servers run in their own processes and take the same bounded load, in the same run.
 */
import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { callsFor, KEEP_ALIVE } from '../../bench/measure.ts';
import { heapFlags, withMallocEnv } from '../core/heap.ts';
import type { FromComponent, ToComponent } from '../core/ipc.ts';
import { testContext, testDataDir } from '../core/testing.ts';
import { componentEntry, entryArgs } from '../stack/component.ts';

const benchApp = fileURLToPath(new URL('./test/app-bench/', import.meta.url));

/**
 * `concurrency` keep-alive clients calling GET `url` back to back for `durationMs`, after as long a
 * warm-up under the same load; answers requests/s. A fresh process runs its first thousands of calls
 * partly unoptimized while its compiler threads take a fifth of its CPU or more: start-up cost, not the
 * rate a running host keeps (the managetask bench warms up likewise). Both servers get the same.
 */
async function load(url: string, concurrency: number, durationMs: number): Promise<number> {
  const agent = new Agent({ ...KEEP_ALIVE, maxSockets: concurrency });
  const get = () =>
    new Promise<void>((resolve, reject) => {
      request(url, { agent }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`${url} answered ${res.statusCode}`));
        res.resume().on('end', resolve);
      })
        .on('error', reject)
        .end();
    });
  /** Every client calling back to back for `ms`; answers requests/s. */
  const run = async (ms: number) => {
    const began = performance.now();
    const done = await callsFor(ms, concurrency, get);
    return done / ((performance.now() - began) / 1000);
  };
  await run(durationMs);
  const perSec = await run(durationMs);
  agent.destroy();
  return perSec;
}

/**
 * Plain JavaScript on bare Node, as the launcher runs its components (no TypeScript loader, the host
 * with its heap flags, its code cache being only valid with them, and the launcher's malloc settings).
 */
const fork_ = (script: string, args: string[] = [], execArgv: string[] = [], env = process.env) =>
  fork(script, args, { execArgv, env, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });

/** The same handler in bare node:http. */
async function bareServer(): Promise<{ url: string; stop(): void }> {
  const child = fork_(fileURLToPath(new URL('./test/app-bench/bare.js', import.meta.url)));
  child.stdout?.resume();
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: { port: number }) => resolve(message.port));
    child.once('exit', (code) => reject(new Error(`bare server exited (${code})`)));
  });
  return { url: `http://127.0.0.1:${port}/api/hello`, stop: () => child.kill() };
}

/**
 * The host as the launcher runs it (the bundled stack/child.ts over IPC), its console drained without
 * being parsed so that this process, the load generator, is not also busy with the host's log lines.
 * Answers the base URL and the start time the host reports (its app's import and `Host started (Nms)`).
 */
async function hostServer(dataDir: string, options: Record<string, unknown>) {
  const context = await testContext(dataDir);
  const entry = await componentEntry('functions');
  const child = fork_(
    entry.path,
    entryArgs(entry, options),
    heapFlags('functions'),
    withMallocEnv(process.env),
  );
  let seen = '';
  // The host's output may arrive after its ready message: wait for the line itself.
  const reported = new Promise<{ startMs: number; appLoadMs: number }>((resolve) => {
    const onData = (chunk: string) => {
      seen += chunk;
      const match = /Host started \((\d+)ms\)/.exec(seen);
      if (!match) return;
      child.stdout?.off('data', onData);
      child.stdout?.resume();
      // `Host started` counts from after the app's import (Emulator.load, done here at the start: this
      // process was sent no `load` ahead), so the start is both.
      const appLoadMs = Number(/entry point file\(s\) in (\d+)ms/.exec(seen)?.[1]);
      resolve({
        startMs: Number(match[1]) + appLoadMs,
        appLoadMs,
      });
    };
    child.stdout?.setEncoding('utf8').on('data', onData);
  });
  const start: ToComponent = {
    type: 'start',
    name: 'functions',
    emulator: 'functions',
    options: { port: 0, ...options },
    stateDir: join(dataDir, 'state'),
    tls: context.tls,
    secrets: context.secrets,
    topology: context.topology,
    shifts: [],
  };
  child.send(start);
  const endpoints = await new Promise<Record<string, string>>((resolve, reject) => {
    child.on('message', (message: FromComponent) => {
      if (message.type === 'ready') resolve(message.endpoints);
      if (message.type === 'failed') reject(new Error(message.message));
    });
    child.once('exit', (code) => reject(new Error(`functions host exited (${code})`)));
  });
  return {
    baseUrl: endpoints.baseUrl as string,
    ...(await reported),
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' } satisfies ToComponent);
      await exited;
    },
  };
}

export async function benchFunctionsHost(
  options: {
    appDir?: string;
    settings?: Record<string, string>;
    concurrency?: number;
    durationMs?: number;
  } = {},
): Promise<{
  startMs: number;
  appLoadMs: number;
  requestsPerSec: number;
  bareRequestsPerSec: number;
  ratio: number;
}> {
  const { concurrency = 16, durationMs = 2000 } = options;
  const data = testDataDir();
  const settings = { AzureWebJobsSecretStorageType: 'files', ...options.settings };
  try {
    const started = await hostServer(data.dir, { appDir: options.appDir ?? benchApp, settings });
    const { startMs, appLoadMs } = started;
    await started.stop();

    const logFile = join(data.dir, 'logs', 'functions.jsonl');
    const host = await hostServer(data.dir, { appDir: benchApp, settings, logFile });
    const bare = await bareServer();
    try {
      const requestsPerSec = await load(`${host.baseUrl}/api/hello`, concurrency, durationMs);
      const bareRequestsPerSec = await load(bare.url, concurrency, durationMs);
      return {
        startMs,
        appLoadMs,
        requestsPerSec,
        bareRequestsPerSec,
        ratio: requestsPerSec / bareRequestsPerSec,
      };
    } finally {
      bare.stop();
      await host.stop();
    }
  } finally {
    data.remove();
  }
}
