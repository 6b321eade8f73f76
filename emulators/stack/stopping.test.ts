/**
 * Stopping as users and machines do it: Ctrl-C in a terminal (SIGINT to the whole process group),
 * SIGTERM to the group, a second Ctrl-C while stopping, `taskstack stop` from elsewhere, the reader of
 * its output gone (a pipe), and the launcher killed outright.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { FREE_PORTS_ENV, freeRange } from '../core/http.ts';
import { testDataDir, waitFor } from '../core/testing.ts';
import { stackFilePath } from './stackfile.ts';
import {
  accepts,
  alive,
  type CliStack,
  commandLineOf,
  descendants,
  everyComponent,
  logsOf,
  portsOf,
  runCli,
  secretsOf,
  spawnCli,
  startCli,
  whenPrinted,
} from './test-support.ts';

/**
 * A data directory and free ports of its own (`TASKSTACK_FREE_PORTS`, a slice of this worker's range)
 * for each test's stack, as for stacks side by side on one machine: the tests run at once.
 */
const SLICES = 8;
const dirs: ReturnType<typeof testDataDir>[] = [];
afterAll(() => {
  for (const dir of dirs) dir.remove();
});
function ownPlace(): { dataDir: string; env: NodeJS.ProcessEnv } {
  if (dirs.length === SLICES) throw new Error(`more stacks than SLICES (${SLICES}): raise it`);
  const [low, high] = freeRange();
  const size = Math.floor((high - low) / SLICES);
  const from = low + dirs.length * size;
  const dir = testDataDir();
  dirs.push(dir);
  return { dataDir: dir.dir, env: { ...process.env, [FREE_PORTS_ENV]: `${from}-${from + size - 1}` } };
}
const data = ownPlace();

/** What a clean stop must not print: crash reports, restarts, Azurite's double close, errors. */
const NOISE = /unexpected|restart|Cannot close|Error|killed/;

/**
 * The components of the tests whose subject is one way of stopping (a signal, a command, a lost reader)
 * rather than what each component does when stopped (the Ctrl-C test's whole stack): an app and the
 * service it waits for, whose stop says something (Azurite). A whole stack costs ~3 s of CPU to start
 * and stop, these ~1 s.
 */
const SOME = ['blob', 'functions'];
const onlySome = ['--components', SOME.join(',')];

/** Everything the stack runs (`components`): the launcher's processes and their ports, taken while it is up. */
async function snapshot(stack: CliStack, components = everyComponent) {
  const pids = descendants(stack.child.pid as number);
  // Each component, Azurite under the blob component, and no more than a few helpers (esbuild).
  expect(pids.length).toBeGreaterThanOrEqual(components.length + 1);
  const ports = portsOf(stack.description().endpoints);
  for (const port of ports) expect(await accepts(port), `port ${port} while running`).toBe(true);
  return { pids, ports };
}

/** Stops process `pid` (SIGSTOP); the function returned lets it go on, unless it is gone already. */
function freeze(pid: number): () => void {
  process.kill(pid, 'SIGSTOP');
  return () => {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // ESRCH: gone already
    }
  };
}

async function expectAllGone({ pids, ports }: { pids: number[]; ports: number[] }, dataDir: string) {
  await waitFor('every process of the stack to exit', () => pids.every((pid) => !alive(pid)), 60_000);
  for (const port of ports) expect(await accepts(port), `port ${port}`).toBe(false);
  expect(existsSync(stackFilePath(dataDir))).toBe(false);
}

/**
 * Every process `child` ever has, watched every 10 ms until `stop()` answers them (one forked after a stop
 * began included).
 */
function everyProcessOf(child: ChildProcess) {
  const seen = new Set<number>();
  const watching = setInterval(() => {
    for (const pid of descendants(child.pid as number)) seen.add(pid);
  }, 10);
  return {
    stop() {
      clearInterval(watching);
      return seen;
    },
  };
}

// Every test starts its own stack, and they run side by side; the two whole-stack tests share one,
// one after the other.
describe.concurrent('stopping the stack', () => {
  describe('a whole stack', () => {
    /**
     * The stack the launcher-killed test started after its orphans: the Ctrl-C test stops it rather than
     * start one more (a stack start is most of each test's time), or starts its own when run alone.
     */
    let carriedOn: CliStack | undefined;

    it.sequential('components exit when the launcher is killed; the next start on the same ports says so and carries on', async () => {
      const stack = await startCli(data, '--free-ports');
      const running = await snapshot(stack);
      const { endpoints } = stack.description();
      process.kill(stack.child.pid as number, 'SIGKILL');
      await stack.exited;
      expect(existsSync(stackFilePath(data.dataDir))).toBe(true);

      // At once, on the very ports the dead stack held: the start waits for its orphans to let go.
      const portFlags = Object.entries(endpoints).flatMap(([name, named]) => {
        const port = portsOf({ [name]: named })[0];
        return port ? [`--${name}-port`, String(port)] : [];
      });
      const next = await startCli(data, '--free-ports', ...portFlags);
      // Stopped by the next test, as any stack is (also when a check below fails).
      carriedOn = next;
      expect(next.output()).toContain(
        `found stack.json of a stack that is no longer running (pid ${stack.child.pid}, not stopped cleanly); replaced it`,
      );
      expect(next.output()).not.toContain('still held');
      for (const pid of running.pids) expect(alive(pid), `orphan ${pid}`).toBe(false);
      expect(next.description().pid).toBe(next.child.pid);
    });

    it.sequential('Ctrl-C in a terminal (SIGINT to the process group) stops everything quietly, in order', async () => {
      const stack = carriedOn ?? (await startCli(data, '--free-ports'));
      const running = await snapshot(stack);
      process.kill(-(stack.child.pid as number), 'SIGINT');
      expect(await stack.exited).toBe(0);
      const afterStop = stack.output().slice(stack.output().indexOf('stopping…'));
      expect(afterStop).toContain('stopped.');
      expect(afterStop, afterStop).not.toMatch(NOISE);
      await expectAllGone(running, data.dataDir);
      // Keys are never logged: not in the console (often kept as a log) nor in the log files.
      const secrets = secretsOf(data.dataDir);
      expect(secrets.length).toBeGreaterThan(20);
      for (const text of [stack.output(), ...logsOf(data.dataDir)]) {
        for (const secret of secrets)
          expect(text.includes(secret), 'a key in the console or a log').toBe(false);
      }
    });
  });

  it('Ctrl-C the moment the banner shows still stops everything (a script stopping the stack once it is ready)', async () => {
    const place = ownPlace();
    const { child, output, exited } = spawnCli(place, '--free-ports', ...onlySome);
    // In the same turn as the banner's arrival: no time for the launcher to do anything more.
    whenPrinted(child, 'taskstack is ready', () => process.kill(-(child.pid as number), 'SIGINT'));
    expect(await exited, output()).toBe(0);
    expect(child.signalCode).toBeNull();
    expect(output()).toContain('stopped.');
    expect(existsSync(stackFilePath(place.dataDir))).toBe(false);
  });

  it('Ctrl-C during the start stops what has started, leaves nothing behind, and exits as interrupted (130)', async () => {
    const place = ownPlace();
    const { child, output, exited } = spawnCli(place, '--free-ports', ...onlySome);
    const watched = everyProcessOf(child);
    // The first component is ready: the others, the apps among them, are still starting.
    whenPrinted(child, ' ready in ', () => process.kill(-(child.pid as number), 'SIGINT'));
    const code = await exited;
    const seen = watched.stop();
    expect(code, output()).toBe(130);
    expect(child.signalCode).toBeNull();
    const afterStop = output().slice(output().indexOf('stopping…'));
    expect(output()).not.toContain('taskstack is ready');
    expect(afterStop).toContain('stopped.');
    // Components stopped while starting are not reported as failed.
    expect(afterStop, afterStop).not.toMatch(/failed/);
    expect(afterStop, afterStop).not.toMatch(NOISE);
    expect(seen.size).toBeGreaterThan(0);
    await waitFor('every process the launcher had to exit', () => [...seen].every((pid) => !alive(pid)));
    expect(existsSync(stackFilePath(place.dataDir))).toBe(false);
  });

  it('SIGTERM to the group, then a second Ctrl-C while stopping, still ends with a complete stop', async () => {
    const place = ownPlace();
    const stack = await startCli(place, '--free-ports', ...onlySome);
    const running = await snapshot(stack, SOME);
    const group = -(stack.child.pid as number);
    // The stop cannot end while the functions host is frozen, so the second signal always meets it under
    // way (two components stop in a few milliseconds); the host is thawed once the launcher has said so.
    const host = running.pids.find((pid) => commandLineOf(pid)?.includes('functions.cjs')) as number;
    const thaw = freeze(host);
    whenPrinted(stack.child, 'stopping…', () => process.kill(group, 'SIGINT'));
    whenPrinted(stack.child, 'still stopping…', thaw);
    process.kill(group, 'SIGTERM');
    const code = await stack.exited;
    thaw();
    expect(code).toBe(0);
    const afterStop = stack.output().slice(stack.output().indexOf('stopping…'));
    expect(afterStop).toContain('still stopping…');
    expect(afterStop).toContain('stopped.');
    expect(afterStop, afterStop).not.toMatch(NOISE);
    await expectAllGone(running, place.dataDir);
  });

  it('Ctrl-C that also ends the reader of its output (`npm start | grep x`) still stops everything quietly', async () => {
    const place = ownPlace();
    const stack = await startCli(place, '--free-ports', ...onlySome);
    const running = await snapshot(stack, SOME);
    const before = stack.output().length;
    process.kill(-(stack.child.pid as number), 'SIGINT');
    // The reader goes with the same signal: every later write to stdout fails (EPIPE). stderr is still read.
    stack.child.stdout?.destroy();
    expect(await stack.exited).toBe(0);
    expect(stack.output().slice(before)).toBe('');
    await expectAllGone(running, place.dataDir);
  });

  it('a reader of its output that goes during the start (`npm start | head -3`) stops it, as SIGPIPE would', async () => {
    const place = ownPlace();
    const { child, output, exited } = spawnCli(place, '--free-ports', ...onlySome);
    const watched = everyProcessOf(child);
    whenPrinted(child, ' starting', () => child.stdout?.destroy());
    const code = await exited;
    const seen = watched.stop();
    // 128 + SIGPIPE, as a shell reports a command that signal ended; stderr (still read) says nothing.
    expect(code, output()).toBe(141);
    expect(output()).not.toMatch(NOISE);
    expect(output()).not.toContain('taskstack is ready');
    await waitFor('every process the launcher had to exit', () => [...seen].every((pid) => !alive(pid)));
    expect(existsSync(stackFilePath(place.dataDir))).toBe(false);
  });

  it('`taskstack stop` during the start stops what has started, as SIGTERM does (143)', async () => {
    const place = ownPlace();
    const { child, output, exited } = spawnCli(place, '--free-ports', ...onlySome);
    const watched = everyProcessOf(child);
    // The start cannot end while the functions host is frozen: it is forked at once, but can be ready
    // only after Azurite. The command (a process of its own, ~0.3 s to load) then meets a start under way.
    const host = await waitFor('the functions host forked', () =>
      descendants(child.pid as number).find((pid) => commandLineOf(pid)?.includes('functions.cjs')),
    );
    const thaw = freeze(host);
    // Thawed once the launcher stops the start, so that it can take its own stop; unless the launcher
    // has already ended it (a process that has started nothing is killed).
    whenPrinted(child, 'stopping…', thaw);
    const stopped = await runCli(['stop', '--data-dir', place.dataDir]);
    const code = await exited;
    // A launcher that died without stopping it (SIGTERM unhandled) left it frozen: thawed, it sees the
    // launcher gone and exits, rather than stay stopped on the machine after the test failed.
    thaw();
    const seen = watched.stop();
    expect(stopped).toEqual({ status: 0, stdout: `stopped the stack on ${place.dataDir}.\n`, stderr: '' });
    expect(code, output()).toBe(143);
    expect(output()).not.toContain('taskstack is ready');
    await waitFor('every process the launcher had to exit', () => [...seen].every((pid) => !alive(pid)));
    expect(existsSync(stackFilePath(place.dataDir))).toBe(false);
  });

  it('`taskstack stop` returns only once everything is down, and says so', async () => {
    const place = ownPlace();
    const stack = await startCli(place, '--free-ports', ...onlySome);
    const running = await snapshot(stack, SOME);
    // While it runs, the same CLI lists the host keys, as `az functionapp keys list` would.
    const keys = await runCli(['functions', 'keys', 'list', '--data-dir', place.dataDir]);
    expect(keys.status, keys.stderr).toBe(0);
    const { functionKey, masterKey } = stack.description() as unknown as Record<string, string>;
    expect(JSON.parse(keys.stdout)).toMatchObject({ functionKeys: { default: functionKey }, masterKey });

    const stop = await runCli(['stop', '--data-dir', place.dataDir]);
    expect(stop.status, stop.stderr).toBe(0);
    expect(stop.stdout).toContain(`stopped the stack on ${place.dataDir}.`);
    // Checked at once, not polled: the command returned, so it must all be over.
    expect(existsSync(stackFilePath(place.dataDir))).toBe(false);
    expect(alive(stack.child.pid)).toBe(false);
    await expectAllGone(running, place.dataDir);
    const again = await runCli(['stop', '--data-dir', place.dataDir]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain(`no stack is running on ${place.dataDir}`);
  });
});
