/**
 * `taskstack` — start the local stack, move its clock, manage function keys, reset its data; USAGE
 * below lists every command.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync, rmSync } from 'node:fs';
import { constants, homedir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { argsRefusal } from '../core/args.ts';
import { repositoryRoot } from '../core/files.ts';
import { resolveDataDir } from './data-dir.ts';

// Every other module is imported where a command needs it: the bundle keeps each dynamic import a chunk
// loaded at its first use, so `help` loads nothing, and `status`, `stop`, `reset` and `clock` neither zod
// nor the launcher (README, issue 13).

/** What `taskstack help` prints, and what an unknown command or option points to. */
const USAGE = `usage:
  taskstack start [--data-dir DIR] [--port-base N | --free-ports] [--<component>-port N] [--in-memory]
                  [--encryption-key TEXT] [--components blob,cosmos,…] [--no-watch]
  taskstack status | stop | reset [--data-dir DIR]
  taskstack clock advance [--days N] [--hours N] [--minutes N] [--seconds N] [--data-dir DIR]
  taskstack functions keys list|set|renew …          function keys, as az functionapp keys (README.md)
  taskstack deploy --resource-group RG [--environment dev|prod] [--dry-run]   (system/deploy/README.md)
  taskstack conformance [--target FILE] [--data-dir DIR]              the documented-status table (contracts/)
  taskstack scenario run <name|all> [--target FILE] [--data-dir DIR]  the end-to-end flows (scenarios/)
  taskstack help
The data directory is --data-dir, else TASKSTACK_DATA_DIR, else the project's .taskstack.`;
const HELP_HINT = '`taskstack help` lists the commands and their options';

const argv = process.argv.slice(2);
// No command, or flags first: `start`, as `npm start` runs it.
const [command = 'start', ...rest] = argv[0]?.startsWith('-') === false ? argv : ['start', ...argv];
if (['help', '--help', '-h'].includes(command) || rest.includes('--help') || rest.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const { lockHolder, notDataDirectory, processAlive, removalRefusal, runningStack } = await import(
  './stackfile.ts'
);

/**
 * Sets zod up before a command's first parse, for the commands that validate with it (their modules
 * import it; it is loaded here first): as in child.ts, this process parses each schema once or twice.
 */
async function setUpZod() {
  const { z } = await import('zod');
  z.config({ jitless: true });
}

/** How long a failed start waits for a signal that may have caused it (see startCommand). */
const SIGNAL_GRACE_MS = 100;
/** The signals that stop the stack: Ctrl-C, `taskstack stop` (and kill), a closing terminal. */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Calls `then` once when whoever reads this process's output has gone (`npm start | grep x`, the reader
 * ended by the same Ctrl-C; `| head`): every write then fails with EPIPE. The later failures are
 * ignored: unhandled, the first killed the launcher mid-stop with a stack trace, leaving stack.json
 * behind; and `then` must not write (a failed write would call it again).
 */
function whenOutputLost(then: () => void) {
  let lost = false;
  const onError = () => {
    if (lost) return;
    lost = true;
    then();
  };
  process.stdout.on('error', onError);
  process.stderr.on('error', onError);
}

/**
 * Runs a script of the project against a target in its own process; exits with its exit code.
 * `targetArgs`: the part of `args` naming the target. The process trusts the target stack's CA as the
 * stack's own processes do (openSslTrust), beside any NODE_EXTRA_CA_CERTS of the caller's (which many
 * machines set to a bundle of their own, and which can name only one file).
 */
async function runAgainstTarget(
  command: string,
  path: string,
  args: string[],
  targetArgs: string[],
): Promise<never> {
  await setUpZod();
  const { targetOrExit } = await import('../../contracts/target.ts');
  const { openSslTrust } = await import('../core/ca.ts');
  const { bundle, stopBuilding } = await import('../core/bundle.mjs');
  const { ca } = targetOrExit(command, targetArgs, process.env).target;
  const trust = ca ? openSslTrust({ ...process.env, NODE_EXTRA_CA_CERTS: ca }) : undefined;
  const { NODE_EXTRA_CA_CERTS: callers } = process.env;
  const env = trust ? { ...trust.env, ...(callers && { NODE_EXTRA_CA_CERTS: callers }) } : process.env;
  // From its bundle, as this CLI runs: under tsx each run cost ~0.85 s of CPU, bundled ~0.15 s.
  // playwright-core (a browser only tests launch) stays out: its optional packages are not installed.
  const script = await bundle(fileURLToPath(new URL(path, import.meta.url)), {
    packages: 'bundle',
    external: ['playwright-core'],
  }).catch((error: Error) => fail(error.message));
  await stopBuilding();
  const run = spawnSync(process.execPath, [...(trust?.execArgv ?? []), script, ...args], {
    stdio: 'inherit',
    env,
  });
  process.exit(run.status ?? 1);
}
// Commands with flags of their own.
if (command === 'functions') await functionsCommand(rest);
if (command === 'deploy') {
  await setUpZod();
  const { deployCommand } = await import('../../system/deploy/deploy.ts');
  await deployCommand(rest);
}
if (command === 'conformance') await runAgainstTarget(command, '../../contracts/conformance.ts', rest, rest);
if (command === 'scenario') {
  if (rest[0] !== 'run' || !rest[1] || rest[1].startsWith('-'))
    fail('usage: taskstack scenario run <name|all> [--target FILE]');
  await runAgainstTarget('scenario run', '../../scenarios/run.ts', rest.slice(1), rest.slice(2));
}
/**
 * The name of every port (`--<component>-port N`): the services' and the apps'. system/apps.json, which
 * names the apps, is read (and checked) only by `start` and by a command given a port flag: the other
 * commands accept port flags and ignore them, and without one they answer without reading it.
 */
async function portNamesOf(args: string[]): Promise<string[]> {
  if (command !== 'start' && !args.some((arg) => arg.includes('-port'))) return [];
  await setUpZod();
  const { loadApps } = await import('../core/apps.ts');
  const { stackPorts } = await import('./ports.ts');
  return Object.keys(stackPorts(loadApps()));
}
const portNames = await portNamesOf(rest);
const portFlags = Object.fromEntries(portNames.map((name) => [`${name}-port`, { type: 'string' as const }]));
const { values, positionals } = parseFlags({
  'data-dir': { type: 'string' },
  'port-base': { type: 'string' },
  'free-ports': { type: 'boolean' },
  components: { type: 'string' },
  'in-memory': { type: 'boolean' },
  'no-watch': { type: 'boolean' },
  'encryption-key': { type: 'string' },
  days: { type: 'string' },
  hours: { type: 'string' },
  minutes: { type: 'string' },
  seconds: { type: 'string' },
  function: { type: 'string' },
  ...portFlags,
});
// Only `clock advance` takes a word after its command.
const extra = positionals[command === 'clock' ? 1 : 0];
if (extra !== undefined) fail(`unexpected argument ${extra}; ${HELP_HINT}`);
const dataDir = dataDirOf(values['data-dir']);

/** The data directory (--data-dir, TASKSTACK_DATA_DIR, the project's); a wrong one ends in one line. */
function dataDirOf(flag: string | undefined): string {
  try {
    return resolveDataDir(flag);
  } catch (error) {
    fail((error as Error).message);
  }
}

function fail(message: string): never {
  console.error(`taskstack: ${message}`);
  process.exit(1);
}

/** parseArgs, with its refusal (an unknown option, a missing value) said in one line instead of thrown. */
function parseFlags<T extends ParseArgsConfig['options']>(options: T) {
  try {
    return parseArgs({ args: rest, allowPositionals: true, options });
  } catch (error) {
    fail(`${argsRefusal(error)}; ${HELP_HINT}`);
  }
}

/** A port flag's value: a whole number from 1 to 65535. */
function portFlag(flag: string, text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65535)
    fail(`--${flag} must be a port number from 1 to 65535, not ${text}`);
  return port;
}

/** The stack running on `dir`; ends the command in one line when there is none, or it is still starting. */
function readyStack(dir: string) {
  const stack = runningStack(dir);
  if (stack) return stack;
  // The launcher holds the directory from its start's first moment; stack.json comes once it is ready.
  const starting = lockHolder(dir);
  if (starting !== undefined)
    fail(`the stack on ${dir} (pid ${starting}) is still starting: try again once it is ready`);
  fail(`no stack is running on ${dir}`);
}

/** Calls the running stack's control API. */
async function control(method: string, path: string, body?: unknown): Promise<unknown> {
  const stack = readyStack(dataDir);
  const { CONTROL_KEY_HEADER, callControl } = await import('./control.ts');
  const response = await callControl(`${stack.controlUrl}${path}`, {
    method,
    headers: { [CONTROL_KEY_HEADER]: stack.masterKey, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).catch((error: Error) => fail(error.message));
  const result = await response.json();
  if (!response.ok) fail((result as { error: string }).error);
  return result;
}

/** `taskstack functions keys …`: its own flags, so it is dispatched before the others are parsed. */
async function functionsCommand(argv: string[]): Promise<never> {
  const connect = (flag: string | undefined) => {
    const stack = readyStack(dataDirOf(flag));
    return { url: stack.controlUrl, key: stack.masterKey };
  };
  const { keysCommand } = await import('../functions-host/cli.ts');
  try {
    console.log(await keysCommand(argv, connect));
    process.exit(0);
  } catch (error) {
    fail((error as Error).message);
  }
}

async function startCommand() {
  // Two ways to choose every port: one would silently win.
  if (values['free-ports'] && values['port-base'] !== undefined)
    fail(`--free-ports and --port-base choose the same ports: give one of them; ${HELP_HINT}`);
  const names = values.components?.split(',').map((name) => name.trim());
  if (names?.some((name) => !name))
    fail(`--components takes component names separated by commas, not '${values.components}'`);
  const portOverrides: Record<string, number> = {};
  for (const name of portNames) {
    const flag = values[`${name}-port` as keyof typeof values];
    if (typeof flag === 'string') portOverrides[name] = portFlag(`${name}-port`, flag);
  }
  const encryptionKey = values['encryption-key'] ?? process.env.TASKSTACK_ENCRYPTION_KEY;
  if (encryptionKey === '')
    fail(
      'the EncryptionKey is empty (--encryption-key "" or TASKSTACK_ENCRYPTION_KEY=""): give its text, or neither for a random one per data directory',
    );
  const { start } = await import('./launcher.ts');
  const { banner } = await import('./banner.ts');
  const { stopBuilding } = await import('../core/bundle.mjs');
  const began = performance.now();
  // A signal during the start (Ctrl-C, a closing terminal) stops whatever has started, in order.
  const interrupt = new AbortController();
  let interruptedBy: NodeJS.Signals | undefined;
  const duringStart = (signal: NodeJS.Signals) => {
    if (interruptedBy) return console.log('still stopping…');
    interruptedBy = signal;
    console.log('stopping…');
    interrupt.abort();
  };
  // During the start, then once started (shutdown). The output's reader gone stops it as a closing
  // terminal does (SIGPIPE); the components' lines still go to their log files.
  let stopOn: (signal: NodeJS.Signals) => void = duringStart;
  for (const signal of SIGNALS) process.on(signal, (received) => stopOn(received));
  whenOutputLost(() => stopOn('SIGPIPE'));
  const stack = await start(
    {
      dataDir,
      ports: values['free-ports']
        ? 'free'
        : values['port-base']
          ? { base: portFlag('port-base', values['port-base']) }
          : 'default',
      portOverrides,
      inMemory: values['in-memory'] ?? false,
      components: names,
      encryptionKey,
      // As `func start` watches its app: an edit rebuilds and restarts only its app (README "Reload on edit").
      watch: !values['no-watch'],
    },
    { signal: interrupt.signal },
  ).catch(async (error: Error) => {
    // Interrupted, whatever failed is the signal's doing. The terminal's Ctrl-C also ends esbuild's
    // service (in this process group), and the build under way may fail ("The service was stopped")
    // before this process has handled the signal: a failure gives the signal a moment to arrive.
    if (!interruptedBy) await new Promise((resolve) => setTimeout(resolve, SIGNAL_GRACE_MS));
    if (!interruptedBy) fail(error.message);
    await stopBuilding();
    console.log('stopped.');
    // As a shell reports a command a signal ended: 128 + the signal's number (130 for Ctrl-C).
    process.exit(128 + constants.signals[interruptedBy]);
  });
  let stopping = false;
  const shutdown = async () => {
    // A second Ctrl-C changes nothing: the stop runs to its end (a component that does not stop within
    // its grace is killed), so no process and no stack.json is left behind.
    if (stopping) return console.log('still stopping…');
    stopping = true;
    console.log('stopping…');
    await stack.stop();
    console.log('stopped.');
    process.exit(0);
  };
  // SIGHUP: the terminal went away. Before the banner: whoever reads it may stop the stack at once (a
  // signal that came between the banner and this handler killed the launcher, leaving stack.json).
  stopOn = shutdown;
  console.log(banner(stack.description, performance.now() - began));
  // The builds are done. Only now: a Ctrl-C while esbuild stopped (as the banner shows) killed the launcher.
  await stopBuilding();
}

/** `taskstack stop`: signals the launcher, then returns only once it has stopped everything. */
async function stopCommand() {
  // The launcher holds the data directory from its start's first moment (before stack.json) to its stop.
  const pid = lockHolder(dataDir) ?? fail(`no stack is running on ${dataDir}`);
  try {
    process.kill(pid, 'SIGTERM');
  } catch (error) {
    // EPERM: started by another user (root, in a container); the lock is readable, the process not ours.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') fail((error as Error).message);
    fail(`the stack on ${dataDir} (pid ${pid}) is another user's: stop it as that user (EPERM)`);
  }
  // Bounded by the components' stop grace (15 s each, in order): two minutes means something is stuck.
  const deadline = Date.now() + 120_000;
  while (processAlive(pid)) {
    if (Date.now() > deadline) fail(`the stack (pid ${pid}) has not stopped within two minutes`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  console.log(`stopped the stack on ${dataDir}.`);
}

/** `--days 1 --minutes 5` → `{ days: 1, minutes: 5 }`, each a decimal number ≥ 0 (fractions too). */
function clockAdvance(): Record<string, number> {
  const units = (['days', 'hours', 'minutes', 'seconds'] as const).filter(
    (unit) => values[unit] !== undefined,
  );
  if (!units.length)
    fail('usage: taskstack clock advance [--days N] [--hours N] [--minutes N] [--seconds N]');
  return Object.fromEntries(
    units.map((unit) => {
      const text = String(values[unit]).trim();
      // Decimal digits only: Number() would also take 0x10 (16), 0b1, 1e3 and Infinity.
      if (!/^(\d+(\.\d+)?|\.\d+)$/.test(text)) fail(`--${unit} must be a number ≥ 0, not ${text}`);
      const value = Number(text);
      return [unit, value];
    }),
  );
}

switch (command) {
  case 'start':
    await startCommand();
    break;
  case 'status': {
    const health = (await control('GET', '/health')) as Record<string, string>;
    console.log(JSON.stringify(health, null, 2));
    // Scripts can rely on the exit code: non-zero when any component is down.
    if (Object.values(health).some((state) => state !== 'ok')) process.exit(1);
    break;
  }
  case 'clock':
    if (positionals[0] !== 'advance') fail('usage: taskstack clock advance --minutes N');
    console.log(JSON.stringify(await control('POST', '/clock/advance', clockAdvance())));
    break;
  case 'stop':
    await stopCommand();
    break;
  case 'reset':
    if (lockHolder(dataDir)) fail(`a stack is running on ${dataDir}; stop it first`);
    if (!existsSync(dataDir)) {
      console.log(`nothing to remove: ${dataDir} does not exist`);
      break;
    }
    {
      // A data directory named wrongly (`.`, `..`, `~`) would take the user's own files with it.
      const places = { cwd: process.cwd(), project: realpathSync(repositoryRoot), home: homedir() };
      const refusal = removalRefusal(realpathSync(dataDir), places) ?? notDataDirectory(dataDir);
      if (refusal) fail(`not removing ${dataDir}: ${refusal}; name the data directory itself`);
      try {
        rmSync(dataDir, { recursive: true, force: true });
      } catch (error) {
        // In our words: Node's differ between versions (20: `EACCES: permission denied, rm …`; 24:
        // `EACCES, Permission denied: …`, naming the path twice).
        const { code, message } = error as NodeJS.ErrnoException;
        const denied = code === 'EACCES' || code === 'EPERM';
        fail(`cannot remove ${dataDir}: ${denied ? `this user may not (${code})` : message}`);
      }
    }
    console.log(`removed ${dataDir}`);
    break;
  default:
    fail(`unknown command ${command}; ${HELP_HINT}`);
}
