/** Helpers for tests of the launcher and of single components: the CLI as a user runs it, a component as the launcher runs it, ports, processes. */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { loadApps } from '../core/apps.ts';
import { type TestContext, testContext, waitFor } from '../core/testing.ts';
import { serviceNames } from '../registry.ts';
import { ComponentProcess, componentEntry } from './component.ts';
import { Console } from './console.ts';
import { processAlive, stackFilePath } from './stackfile.ts';

/** Every component a full stack runs: the services and one per app of system/apps.json. */
export const everyComponent = [...serviceNames, ...Object.keys(loadApps())];

/** `node taskstack.mjs …`: the CLI as `npm start` and the `taskstack` bin run it. */
export const cli = (...args: string[]) => [join(import.meta.dirname, 'taskstack.mjs'), ...args];

/**
 * `env` without the NODE_EXTRA_CA_CERTS the test run gives its own processes (vitest.config.ts), for a
 * command that makes no TLS connection with it: Node 20 given one parses its 144 bundled roots before
 * any code runs (~40 ms of CPU a process, a third of a `taskstack help`).
 */
export function withoutTestCa(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: _, ...rest } = env;
  return rest;
}

/** Every port the stack's endpoints name. */
export const portsOf = (endpoints: Record<string, Record<string, string>>) =>
  Object.values(endpoints)
    .flatMap((named) => Object.values(named))
    .filter((value) => /^\w+:\/\/127\.0\.0\.1:\d+/.test(value))
    .map((url) => Number(new URL(url).port));

export { accepts } from '../core/http.ts';

/**
 * Every secret value of a data directory's keys.json: all its texts but identifiers (tenant, client,
 * principal and object ids, the signing key's id) and the signing key's public half.
 */
export function secretsOf(dataDir: string): string[] {
  const notSecret = /(Id|^kid|^n|^e|^kty|^alg|^use)$/;
  const texts = (value: unknown, name: string): string[] => {
    if (typeof value === 'string') return notSecret.test(name) ? [] : [value];
    if (value === null || typeof value !== 'object') return [];
    return Object.entries(value).flatMap(([key, inner]) => texts(inner, key));
  };
  return texts(JSON.parse(readFileSync(join(dataDir, 'keys.json'), 'utf8')), '');
}

/** The text of every log file of a data directory. */
export const logsOf = (dataDir: string) =>
  readdirSync(join(dataDir, 'logs')).map((name) => readFileSync(join(dataDir, 'logs', name), 'utf8'));

export const alive = (pid: number | undefined) => pid !== undefined && processAlive(pid);

/** Process `pid`'s command line, its arguments joined by spaces; undefined once it is gone. */
export function commandLineOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return undefined;
  }
}

/**
 * Every process below `pid` (children, grandchildren …), read from /proc: each of a process's threads
 * lists the children it forked (`task/<tid>/children`). Reading the tree alone costs a few files, where
 * every process's `stat` cost ~2 ms a call on a quiet machine, more on a busy one: a test that watches a
 * stack's processes every 10 ms spent a fifth of a core on it. Kernels built without those lists (they
 * need CONFIG_PROC_CHILDREN) are read the long way.
 */
export function descendants(pid: number): number[] {
  const childrenOf = existsSync(`/proc/${process.pid}/task/${process.pid}/children`)
    ? threadsChildren
    : byParent();
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const child of childrenOf(parent)) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/** The children of process `pid`, from its threads' lists; none once it is gone. */
function threadsChildren(pid: number): number[] {
  const read = (path: string) => {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return ''; // gone meanwhile
    }
  };
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return threads.flatMap((tid) =>
    read(`/proc/${pid}/task/${tid}/children`).split(' ').filter(Boolean).map(Number),
  );
}

/** The children of every process, from each one's parent pid in its `stat`. */
function byParent(): (pid: number) => number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the 2nd field after the command name in parentheses (which may hold spaces).
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  return (pid) => parents.get(pid) ?? [];
}

/** `taskstack start` in a process group of its own, as a terminal runs it: pid = process group id. */
export interface CliStart {
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /**
   * Its exit code (null when a signal ended it: see `child.signalCode`), once its output is read to the
   * end: Node may tell a child's exit before the last lines it printed (`stopped.`) arrive.
   */
  exited: Promise<number | null>;
}
export interface CliStack extends CliStart {
  description(): { endpoints: Record<string, Record<string, string>>; pid: number };
}

/** Calls `then` once, in the same turn as `text` arrives on the child's stdout. */
export function whenPrinted(child: ChildProcess, text: string, then: () => void) {
  let seen = '';
  const watch = (chunk: Buffer) => {
    seen += chunk;
    if (!seen.includes(text)) return;
    child.stdout?.off('data', watch);
    then();
  };
  child.stdout?.on('data', watch);
}

/** Where `taskstack start` runs: its data directory, and the environment when not this process's. */
export type CliPlace = string | { dataDir: string; env: NodeJS.ProcessEnv };

/** Spawns `taskstack start` and returns at once (a test may signal it while it starts). */
export function spawnCli(place: CliPlace, ...args: string[]): CliStart {
  const { dataDir, env } = typeof place === 'string' ? { dataDir: place, env: process.env } : place;
  const child = spawn(process.execPath, cli('start', '--data-dir', dataDir, ...args), {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    env,
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk;
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { child, output: () => output, exited };
}

/** Spawns `taskstack start` and waits until its banner says the stack is ready. */
export async function startCli(place: CliPlace, ...args: string[]): Promise<CliStack> {
  const started = spawnCli(place, ...args);
  const dataDir = typeof place === 'string' ? place : place.dataDir;
  let gone = false;
  void started.exited.then(() => {
    gone = true;
  });
  await waitFor(
    'taskstack is ready',
    () => {
      if (gone) throw new Error(`taskstack start exited:\n${started.output()}`);
      return started.output().includes('taskstack is ready');
    },
    60_000,
  );
  return { ...started, description: () => JSON.parse(readFileSync(stackFilePath(dataDir), 'utf8')) };
}

/**
 * Runs a `taskstack` command to its end without blocking this process (which may host the stack, or run
 * other commands meanwhile), in `env` (this process's environment by default), in the working directory
 * and as the user `options` name.
 */
export const runCli = (
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  options: Pick<SpawnOptions, 'cwd' | 'uid' | 'gid'> = {},
) => runNode(cli(...args), env, options);

/** Runs `node ARGS` to its end as runCli does: its exit code, and what it wrote to stdout and stderr. */
export function runNode(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  options: Pick<SpawnOptions, 'cwd' | 'uid' | 'gid'> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

/** A component started exactly as the launcher starts it: its own process, driven over core/ipc.ts. */
export interface ComponentUnderTest {
  readonly endpoints: Record<string, string>;
  /** The component process's id (for benchmarks that read its CPU and memory). */
  readonly pid: number | undefined;
  /** The component's console lines so far (all of its processes). */
  readonly output: string[];
  action(name: string, input?: unknown): Promise<unknown>;
  /** Moves the stack clock forward; resolves once the component (if running) has adopted it. */
  advanceClock(ms: number): Promise<void>;
  /** Stops it gracefully; the clock may be moved while it is down. */
  stop(): Promise<void>;
  /** Starts a new process on the same data directory and clock (after `stop`). */
  start(): Promise<void>;
  /** Kills the process with SIGKILL; it comes back by itself, as the launcher restarts crashed components. */
  kill(): void;
}

/** The start message the launcher sends component `name`, for a test's context. */
export const startMessage = (name: string, options: unknown, context: TestContext) => ({
  type: 'start' as const,
  name,
  emulator: name,
  options,
  stateDir: context.stateDir && join(context.stateDir, name),
  tls: context.tls,
  secrets: context.secrets,
  topology: context.topology,
  shifts: [...context.clock.shifts],
});

/**
 * Starts component `name` of the registry in a child process (bundled `stack/child.ts`, as the launcher runs it) with the
 * secrets, CA and state of `dataDir`, and waits until it reports ready. For components that run user
 * code: vitest intercepts `require`/`import` in its workers, so running them in the test is fragile.
 */
export async function startComponent(
  name: string,
  options: unknown,
  dataDir: string,
  opts: { inMemory?: boolean } = {},
): Promise<ComponentUnderTest> {
  const context = await testContext(dataDir, opts);
  const output: string[] = [];
  const out = new PassThrough();
  createInterface({ input: out }).on('line', (line) => output.push(line.replace(/^\S+\s+\| /, '')));
  mkdirSync(join(dataDir, 'logs'), { recursive: true });
  const start = startMessage(name, options, context);
  // What the launcher runs: a TypeScript loader would cost every component process half a second.
  const entry = await componentEntry(name);
  const launch = async () => {
    const logPath = join(dataDir, 'logs', `${name}.log`);
    const process = new ComponentProcess(
      name,
      start,
      globalThis.process.env,
      logPath,
      new Console([name], out),
      entry,
    );
    await process.launch();
    return process;
  };
  // A component that fails its start says why on its output: the failure carries it (the lines read so far).
  let component = await launch().catch(async (error: Error) => {
    await new Promise((resolve) => setImmediate(resolve));
    throw new Error(`${error.message}; its output:\n${output.join('\n')}`);
  });
  return {
    get endpoints() {
      return component.endpoints;
    },
    get pid() {
      return component.pid;
    },
    output,
    action: (action, input) => component.request({ type: 'action', action, input }),
    async advanceClock(ms) {
      context.clock.advance(ms);
      await component.setClock(context.clock.shifts);
    },
    async stop() {
      await component.stop();
    },
    async start() {
      component = await launch();
    },
    kill: () => process.kill(component.pid ?? 0, 'SIGKILL'),
  };
}
