/**
 * Past functionTimeout and its grace, Azure's host restarts the worker that runs the function. Here the
 * worker is the host's process: it ends and the launcher starts it again, whether the function lets the
 * event loop turn (the host's own timer) or holds it (the launcher's watchdog, fed each second).
 */
import { createServer, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { close, listen } from '../core/http.ts';
import { testDataDir, waitFor } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import { startComponent } from '../stack/test-support.ts';
import { appPath, readLog } from './test/helpers.ts';

/**
 * Runs `test` on a host of the timeout app with a data folder of its own, then stops it. Each test waits
 * out a timeout and its grace (~5 s) and restarts its host: with a host each, they run side by side.
 */
async function withHost(test: (host: ComponentUnderTest, logFile: string) => Promise<void>) {
  const data = testDataDir();
  const logFile = join(data.dir, 'logs', 'functions.jsonl');
  const options = {
    port: 0,
    appDir: appPath('app-timeout'),
    logFile,
    settings: { AzureWebJobsSecretStorageType: 'files' },
  };
  try {
    const host = await startComponent('functions', options, data.dir);
    try {
      await test(host, logFile);
    } finally {
      await host.stop();
    }
  } finally {
    data.remove();
  }
}

const call = (host: ComponentUnderTest, name: string) => fetch(`${host.endpoints.baseUrl}/api/${name}`);
const restartLine = (invocationId: string) =>
  `A function timeout has occurred. Restarting worker process executing invocationId '${invocationId}'.`;
const invocationOf = (logFile: string, name: string) =>
  readLog(logFile).find((e) => e.function === name && e.message.startsWith(`Executing 'Functions.${name}'`))
    ?.invocationId as string;
/** The host answers again, from a process other than `pid`. */
const servedByAnotherProcess = (host: ComponentUnderTest, pid: number) =>
  waitFor(
    'the restarted host',
    async () => {
      const answer = await call(host, 'quick').catch(() => undefined);
      return answer?.ok && Number(await answer.text()) !== pid;
    },
    30_000,
  );

describe.concurrent('functionTimeout', () => {
  it('restarts the worker when a function still runs after its timeout and grace, not when it ends within', () =>
    withHost(async (host, logFile) => {
      const pid = host.pid as number;
      // `late` ends once this server answers it, which happens only after its timeout's 500.
      const held: ServerResponse[] = [];
      const release = createServer((_req, res) => held.push(res));
      const port = await listen(release, 0);
      try {
        const late = call(host, `late?release=http://127.0.0.1:${port}/`);
        await waitFor('late to wait for its release', () => held.length === 1);
        // Started after `late`, whose grace thus ends first: `late` would have restarted the worker before
        // `stuck` did, had its end within the grace not counted.
        const stuck = call(host, 'stuck');
        expect((await late).status).toBe(500);
        held[0]?.end('go');
        expect((await stuck).status).toBe(500);
      } finally {
        await close(release);
      }
      await servedByAnotherProcess(host, pid);
      const restarts = readLog(logFile).filter((e) =>
        e.message.startsWith('A function timeout has occurred.'),
      );
      expect(restarts.map((e) => e.message)).toEqual([restartLine(invocationOf(logFile, 'stuck'))]);
      expect(host.output).toContainEqual(
        expect.stringContaining('crashed: a function ran past functionTimeout'),
      );
    }));

  it('restarts the worker when a function holds the event loop, through the launcher', () =>
    withHost(async (host) => {
      const pid = host.pid as number;
      // The host cannot answer while the loop is held, nor say that the function timed out.
      const answer = call(host, 'hold').catch((error: Error) => error);
      await servedByAnotherProcess(host, pid);
      expect(await answer).toBeInstanceOf(Error);
      expect(host.output).toContainEqual(
        expect.stringContaining('silent for 5 s (its event loop is held): killing it'),
      );
    }));
});
