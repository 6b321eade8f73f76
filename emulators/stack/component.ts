import { type ChildProcess, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { repositoryRoot } from '../core/apps.ts';
import { bundleEntries } from '../core/bundle.mjs';
import { openSslTrust } from '../core/ca.ts';
import type { ClockShift } from '../core/clock.ts';
import { type LogFile, openLogFile, printable } from '../core/files.ts';
import { heapFlags, withMallocEnv } from '../core/heap.ts';
import { PortInUseError } from '../core/http.ts';
import {
  type FromComponent,
  InvalidInputError,
  NotAnsweringError,
  NotFoundError,
  type ToComponent,
} from '../core/ipc.ts';
import type { ComponentSecrets } from '../core/secrets.ts';
import { appEnvironment } from '../functions-host/config.ts';
import { emulatorModule, hosts, services } from '../registry.ts';
import type { Console } from './console.ts';

/** How a component's process starts: the module Node runs and its arguments. */
export interface ComponentEntry {
  path: string;
  args: string[];
}
const childSource = fileURLToPath(new URL('./child.ts', import.meta.url));
const runCached = fileURLToPath(new URL('../core/run-cached.cjs', import.meta.url));

/**
 * The entry of emulator `emulator`'s processes: child.ts and that emulator bundled with their packages
 * into one CommonJS file, run on bare Node from V8's code cache (run-cached.cjs). A TypeScript loader
 * would cost each process ~35 MB and half a second, loading a package's hundreds of files one by one
 * most of a component's start, and compiling its bundle without the cache about twice as much.
 * `onBuild` is called when the bundle must be made first.
 */
export async function componentEntry(emulator: string, onBuild?: () => void): Promise<ComponentEntry> {
  const entries = Object.fromEntries(
    [...Object.keys(services), ...Object.keys(hosts)].map((name) => [
      name,
      `import emulator from ${JSON.stringify(emulatorModule(name))};
import { serveComponent } from ${JSON.stringify(childSource)};
serveComponent(emulator);`,
    ]),
  );
  const mains = await bundleEntries('emulators__stack__components', dirname(childSource), entries, onBuild);
  const main = mains[emulator];
  if (!main) throw new Error(`unknown emulator ${emulator}`);
  return { path: runCached, args: [main] };
}

/**
 * The arguments of `entry`'s process for a component started with `options`. A host's start compiles
 * what its app uses (its triggers' listeners, its bindings) and the code cache keeps what the start
 * that wrote it compiled (run-cached.cjs), so each app of the project gets a cache of its own, named by
 * its folder. With one cache for all, the first host to start after a build filled it: a test's app,
 * run before `npm start`, left the system app's host ~25 ms slower to start (~180 against 151 ms,
 * medians of six). Apps outside the project (tests' copies in temporary folders) share one: a cache
 * per folder, 0.4 to 2.6 MB each, was left beside the bundle for every temporary folder a test run made.
 */
export function entryArgs(entry: ComponentEntry, options: unknown): string[] {
  const appDir = (options as { appDir?: unknown } | undefined)?.appDir;
  if (typeof appDir !== 'string') return entry.args;
  const folder = resolve(appDir);
  const inProject = relative(repositoryRoot, folder);
  const name =
    inProject === '..' || inProject.startsWith(`..${sep}`) || isAbsolute(inProject)
      ? 'elsewhere'
      : createHash('sha256').update(folder).digest('hex').slice(0, 16);
  return [`--cache=app-${name}`, ...entry.args];
}

/**
 * How a component's process starts: its emulator's heap flags and the stack's environment, and for a
 * host what its app's settings say of it. Azure runs an app's Node process with every app setting in
 * its environment, so the app's NODE_OPTIONS apply to it; and Azure's Functions host starts the Node
 * worker with the app's `languageWorkers__node__arguments`, split at white space (a functions host's
 * process is the app's worker). `--inspect` in either attaches a debugger to the app's code. A function
 * app's settings are all in its host's environment from the start: the SDKs the host loads before it
 * loads the app read theirs then (AZURE_LOG_LEVEL).
 */
function processOf({ emulator, options }: PendingStart, env: NodeJS.ProcessEnv) {
  const { appDir, settings = {} } = options as { appDir?: string; settings?: Record<string, string> };
  if (emulator === 'functions' && appDir !== undefined) {
    const environment = appEnvironment(appDir, settings, env);
    const worker = environment.languageWorkers__node__arguments?.split(/\s+/).filter(Boolean) ?? [];
    return { execArgv: [...heapFlags(emulator), ...worker], env: environment };
  }
  const nodeOptions = appDir === undefined ? undefined : settings.NODE_OPTIONS;
  return {
    execArgv: heapFlags(emulator),
    env: nodeOptions === undefined ? env : { ...env, NODE_OPTIONS: nodeOptions },
  };
}

type StartMessage = Extract<ToComponent, { type: 'start' }>;
/** The start message, whose secrets may still be in the making (a fresh data directory's signing key). */
type PendingStart = Omit<StartMessage, 'secrets'> & { secrets: ComponentSecrets | Promise<ComponentSecrets> };
/** Checks a (re)started component: its endpoints are the wired ones and it answers its health check. */
export type ReadyCheck = (component: ComponentProcess, endpoints: Record<string, string>) => Promise<void>;

/** Restarts allowed within a minute before a crashing component is given up on. */
const MAX_RESTARTS_PER_MINUTE = 3;

/**
 * How long a running component may take to answer a health check or take a clock move. Each is
 * answered at once unless its process is stopped or its event loop is held (a function in an endless
 * loop, a debugger's breakpoint): `taskstack status` and `clock advance` then say so instead of waiting.
 */
export const ANSWER_WITHIN_MS = 5_000;

/**
 * Whether a child process runs and can be asked something. Node may see a process's exit before the
 * end of its IPC channel, which stays `connected` for that moment: a message sent then is never answered.
 */
const answering = (child: ChildProcess | undefined): child is ChildProcess =>
  child?.connected === true && child.exitCode === null && child.signalCode === null;

/**
 * One component running in its own Node process: started with `start` over IPC, its output
 * prefixed on the console and written to its log file, restarted if it dies unexpectedly.
 */
export class ComponentProcess {
  #child: ChildProcess | undefined;
  /** Forked ahead of its start (prepare), loading its code while it waits for `start`. */
  #prepared: ChildProcess | undefined;
  #pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  #nextId = 1;
  #stopping = false;
  #restarts: number[] = [];
  /** Ends a watched component that has fallen silent (see `#heard`). */
  #silence: NodeJS.Timeout | undefined;
  #log: LogFile | undefined;
  endpoints: Record<string, string> = {};
  /** Called when the component says something stack.json names of it changed (EmulatorContext.changed). */
  onChanged?: (what: 'keys') => void;

  constructor(
    readonly name: string,
    private readonly start: PendingStart,
    private readonly env: NodeJS.ProcessEnv,
    private readonly logPath: string,
    private readonly console: Console,
    private readonly entry: ComponentEntry,
    private readonly check: ReadyCheck = async () => {},
  ) {}

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /**
   * Forks the process now and starts it later (launch): it loads its code (most of its start), and, once
   * `built` resolves (what `load` reads may still be in the making: an app's build), does its emulator's
   * `load` with its options (the functions host imports its app), while the components it waits for start.
   */
  prepare(built: Promise<unknown> = Promise.resolve()): void {
    if (this.#prepared) return;
    const child = this.#spawn();
    this.#prepared = child;
    // A failed build fails the start (launcher); a process killed meanwhile has no channel.
    built.then(
      () =>
        child.connected && child.send({ type: 'load', options: this.start.options } satisfies ToComponent),
      () => {},
    );
  }

  /** Forks the process; resolves with its endpoints once it reports ready and passes the ready check. */
  async launch(): Promise<Record<string, string>> {
    this.#stopping = false;
    const endpoints = await this.#fork();
    const child = this.#child;
    try {
      await this.check(this, endpoints);
    } catch (error) {
      // Up but wrong (other endpoints than the stack wired, or unhealthy): better down than wrong.
      if (this.#child === child) await this.stop();
      throw error;
    }
    return endpoints;
  }

  #spawn(): ChildProcess {
    this.#openLog();
    const own = processOf(this.start, this.env);
    const trust = openSslTrust(withMallocEnv(own.env));
    const child = fork(this.entry.path, entryArgs(this.entry, this.start.options), {
      execArgv: [...own.execArgv, ...trust.execArgv],
      env: trust.env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      // Its own process group: a terminal's Ctrl-C (SIGINT to the whole foreground group) reaches the
      // launcher alone, which then stops the components in order. A component whose launcher dies
      // notices through the IPC channel and exits by itself.
      detached: true,
    });
    // A send racing the child's exit fails with EPIPE on this event; the exit handler deals with the exit.
    child.on('error', (error) => this.#problem(`IPC: ${error.message}`));
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => this.#line(line));
    }
    return child;
  }

  #fork(): Promise<Record<string, string>> {
    // A prepared process that died meanwhile (its exit went unwatched: it had started nothing) is replaced.
    const prepared = this.#prepared;
    this.#prepared = undefined;
    const child = answering(prepared) ? prepared : this.#spawn();
    this.#child = child;
    return new Promise((resolve, reject) => {
      child.on('message', (message: FromComponent) => {
        if (message.type === 'ready') {
          this.endpoints = message.endpoints;
          resolve(message.endpoints);
        } else if (message.type === 'failed') {
          // Typed, so that the launcher can tell a port taken meanwhile from any other failure.
          reject(message.portInUse ? new PortInUseError(message.portInUse) : new Error(message.message));
        } else if (message.type === 'alive') {
          this.#heard(child, message.silentForMs);
        } else if (message.type === 'changed') {
          this.onChanged?.(message.what);
        } else if (message.type === 'reply') {
          const waiter = this.#pending.get(message.id);
          this.#pending.delete(message.id);
          if (message.ok) waiter?.resolve(message.result);
          else
            waiter?.reject(
              message.notFound
                ? new NotFoundError(message.message)
                : message.invalid
                  ? new InvalidInputError(message.message)
                  : new Error(message.message),
            );
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(this.#silence);
        for (const waiter of this.#pending.values()) waiter.reject(new Error(`${this.name} exited`));
        this.#pending.clear();
        reject(new Error(`${this.name} exited during start (${signal ?? code})`));
        if (!this.#stopping) this.#crashed(code, signal);
      });
      Promise.resolve(this.start.secrets).then((secrets) => child.send({ ...this.start, secrets }), reject);
    });
  }

  #line(line: string) {
    this.console.line(this.name, line);
    this.#write(line);
  }

  /** Appends `text` to its log, if open (it is, from its (re)start to its stop). */
  #write(text: string, log = this.#log) {
    log?.write(`${new Date().toISOString()} ${printable(text)}\n`);
  }

  /**
   * A watched component's heartbeat (EmulatorContext.watch): one that falls silent for longer than it
   * allowed has its event loop held, and is killed to be restarted.
   */
  #heard(child: ChildProcess, silentForMs: number) {
    clearTimeout(this.#silence);
    this.#silence = setTimeout(() => {
      this.#problem(`silent for ${silentForMs / 1000} s (its event loop is held): killing it`);
      child.kill('SIGKILL');
    }, silentForMs).unref();
  }

  /** Its log file, opened at its (re)start or by a note (closed at its stop). */
  #openLog(): LogFile {
    // A log that cannot be written (a full disk) must not take the launcher, and the stack, down.
    this.#log ??= openLogFile(this.logPath, (error) =>
      this.console.problem(this.name, `${this.logPath} cannot be written (${error.message}): console only`),
    );
    return this.#log;
  }

  /** A problem shown on the console and kept in the component's log. */
  #problem(text: string) {
    this.console.problem(this.name, text);
    this.#write(text);
  }

  /**
   * A line of the launcher's about this component: in its log, and on the console under its name unless
   * `console` is false (said there under another component's name already).
   */
  note(text: string, { problem = false, console = true } = {}) {
    if (console && problem) this.console.problem(this.name, text);
    else if (console) this.console.line(this.name, text);
    // Also while it is down (after a failed restart): what the launcher says of it belongs in its log.
    this.#write(text, this.#openLog());
  }

  #crashed(code: number | null, signal: string | null) {
    const now = Date.now();
    this.#restarts = [...this.#restarts.filter((at) => now - at < 60_000), now];
    const persisted = this.start.stateDir !== undefined;
    if (this.#restarts.length > MAX_RESTARTS_PER_MINUTE) {
      this.#problem(
        `exited (${signal ?? code}) again, ${this.#restarts.length} times within a minute: not restarting it. ` +
          `See its log, ${this.logPath}, then start the stack again`,
      );
      return;
    }
    this.#problem(
      `exited unexpectedly (${signal ?? code}); restarting${persisted ? '' : ' (in-memory: its data is gone)'}`,
    );
    void this.#relaunch();
  }

  /**
   * Launches it again, as after a crash; says how that went rather than throwing, and answers whether it
   * is up. `failed` runs once a failure is said.
   */
  #relaunch(failed: () => unknown = () => {}): Promise<boolean> {
    return this.launch().then(
      () => {
        this.note('restarted');
        return true;
      },
      async (error: Error) => {
        this.#problem(`restart failed: ${error.message}`);
        await failed();
        return false;
      },
    );
  }

  /**
   * Stops it and starts it again on the same ports and data, as after a crash (its app rebuilt: watch.ts).
   * Answers whether it is up again. One that fails to start stays down: its app's code fails, and would
   * fail each restart a crash gets until it changes.
   */
  async restart(): Promise<boolean> {
    await this.stop();
    return this.#relaunch(() => this.stop());
  }

  /** Gives the component the stack clock's history, now if it runs and at every later (re)start. */
  async setClock(shifts: readonly ClockShift[]): Promise<void> {
    this.start.shifts = [...shifts];
    const child = this.#child;
    if (!answering(child)) return;
    // A process that exits before it answers (stopped, crashed) is not running: its next start takes
    // the history from `start`, so only a running one's failure fails the move. One that does not
    // answer has the message queued and takes the move when it answers again.
    await this.request({ type: 'clock', shifts: this.start.shifts }, ANSWER_WITHIN_MS).catch(
      (error: Error) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        if (error instanceof NotAnsweringError)
          throw new NotAnsweringError(
            `the clock moved, but ${error.message}: it takes the move once it answers again`,
          );
        throw error;
      },
    );
  }

  /** Whether it was asked to stop since its last launch (a launch then ends for that reason). */
  get stopping(): boolean {
    return this.#stopping;
  }

  /** Whether the component's process runs (it may be between a crash and its restart). */
  get running(): boolean {
    return answering(this.#child);
  }

  /**
   * Sends a request over IPC and waits for the component's reply; with `timeoutMs`, at most that long.
   * A reply that comes later is dropped.
   */
  request(
    message: { type: 'clock' | 'health' | 'action' } & Record<string, unknown>,
    timeoutMs?: number,
  ): Promise<unknown> {
    const child = this.#child;
    if (!answering(child)) return Promise.reject(new Error(`${this.name} is not running`));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              this.#pending.delete(id);
              reject(
                new NotAnsweringError(
                  `${this.name} is not answering (no reply within ${timeoutMs / 1000} s)`,
                ),
              );
            }, timeoutMs);
      const settled =
        <T>(then: (value: T) => void) =>
        (value: T) => {
          clearTimeout(timer);
          then(value);
        };
      this.#pending.set(id, { resolve: settled(resolve), reject: settled(reject) });
      child.send({ ...message, id } as ToComponent);
    });
  }

  /**
   * Asks the component to stop; kills it if it has not exited within `graceMs`. A stop takes ~0.1 s on a
   * quiet machine; the grace is for a machine so busy that saving state takes seconds.
   */
  async stop(graceMs = 15_000): Promise<void> {
    this.#stopping = true;
    // One that was never started has nothing to save.
    this.#prepared?.kill('SIGKILL');
    this.#prepared = undefined;
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      if (child.connected)
        child.send({ type: 'stop' } satisfies ToComponent, (error) => error && child.kill());
      else child.kill('SIGTERM');
      const timer = setTimeout(() => {
        // Said out loud: a component that needs killing lost whatever its stop would have saved.
        this.#problem(`did not stop within ${graceMs} ms; killed`);
        child.kill('SIGKILL');
      }, graceMs);
      await exited;
      clearTimeout(timer);
    }
    const log = this.#log;
    this.#log = undefined;
    await log?.end();
  }
}
