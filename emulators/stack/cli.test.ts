/**
 * The `taskstack` command line without a stack: its usage, and the one-line refusal (never a stack
 * trace) of an unknown command or option, a bad value, and a contract command with nothing to run against.
 */
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { commandLineTarget, readTarget } from '../../contracts/target.ts';
import { SCENARIOS } from '../../scenarios/scenarios.ts';
import { loadApps, repositoryRoot } from '../core/apps.ts';
import { close, listen, reasonOf } from '../core/http.ts';
import { testDataDir } from '../core/testing.ts';
import { serviceNames } from '../registry.ts';
import { parseStackOptions } from './options.ts';
import { freePort, stackPorts } from './ports.ts';
import { removalRefusal } from './stackfile.ts';
import { cli, runCli, withoutTestCa } from './test-support.ts';

const execFileAsync = promisify(execFile);
/**
 * A command run to its end, in this process's environment plus `env`. Not spawnSync: the tests of a
 * group run side by side (describe.concurrent), each command a process of its own. None of these
 * commands makes a TLS connection: they run without the test run's CA (withoutTestCa).
 */
const run = (args: string[], env: NodeJS.ProcessEnv = {}, options: Parameters<typeof runCli>[2] = {}) =>
  runCli(args, { ...withoutTestCa(process.env), ...env }, options);
/** Each command of `commands`, side by side, with `--data-dir dir` after it. */
const runEach = (commands: string[][], dir: string) =>
  Promise.all(commands.map((command) => run([...command, '--data-dir', dir])));
const HINT = '`taskstack help` lists the commands and their options';
/** Root may do anything: tests of what another user's files or processes refuse run the CLI as nobody. */
const asRoot = process.getuid?.() === 0;

/** `taskstack help`, run once: it makes the CLI's bundle fresh (see runAsOther). */
let usage: ReturnType<typeof run> | undefined;
const help = () => {
  usage ??= run(['help']);
  return usage;
};

/** The CLI as another user when this one is root (else as this one): its bundle made fresh first. */
async function runAsOther(args: string[]) {
  // Nobody may not write the bundle cache: a CLI changed since its last run is bundled now, as this user.
  await help();
  // Without the test run's CA (run), which lives in a folder nobody may read (Node would warn about it).
  return run(args, {}, asRoot ? { uid: 65534, gid: 65534 } : {});
}
const TARGET_OPTIONS =
  'the options are --target FILE (a stack.json-shaped description of the target) and --data-dir DIR';

describe.concurrent('taskstack help', () => {
  it.each([
    ['help'],
    ['--help'],
    ['-h'],
    ['start', '--help'],
    ['clock', 'advance', '-h'],
  ])('%s prints the usage of every command', async (...args) => {
    const { status, stdout, stderr } = await run(args);
    expect([status, stderr]).toEqual([0, '']);
    expect(stdout).toMatch(/^usage:\n/);
    for (const command of ['start', 'status | stop | reset', 'clock advance', 'functions keys', 'deploy'])
      expect(stdout).toContain(`  taskstack ${command} `);
    for (const command of ['conformance', 'scenario run', 'help'])
      expect(stdout).toContain(`  taskstack ${command}`);
  });
});

describe('taskstack reset', () => {
  const data = testDataDir();
  afterAll(data.remove);

  it('removes the data directory, says when there is none, and refuses while a launcher holds it', async () => {
    const dir = join(data.dir, 'to-reset');
    mkdirSync(join(dir, 'state'), { recursive: true });
    writeFileSync(join(dir, 'keys.json'), '{}');
    // This test's own process, alive, as the holder of the directory's lock.
    writeFileSync(join(dir, 'stack.lock'), String(process.pid));
    // The commands that leave the directory as it is, side by side.
    const refusals = [
      [['functions', 'keys', 'list', '--data-dir'], "Option '--data-dir <value>' argument missing"],
      [
        ['functions', 'keys', 'frobnicate', '--data-dir', dir],
        'usage: functions keys list [--function <name>]',
      ],
    ] as const;
    const [reset, starting, equalsForm, refused] = await Promise.all([
      run(['reset', '--data-dir', dir]),
      runEach([['status'], ['clock', 'advance', '--minutes', '1'], ['functions', 'keys', 'list']], dir),
      run(['functions', 'keys', 'list', `--data-dir=${dir}`]),
      Promise.all(refusals.map(async ([args, refusal]) => ({ ...(await run([...args])), refusal }))),
    ]);
    expect(reset).toMatchObject({
      status: 1,
      stdout: '',
      stderr: `taskstack: a stack is running on ${dir}; stop it first\n`,
    });
    // Held but not ready (no stack.json yet): a launcher still starting, not "no stack".
    for (const result of starting)
      expect(result).toMatchObject({
        status: 1,
        stdout: '',
        stderr: `taskstack: the stack on ${dir} (pid ${process.pid}) is still starting: try again once it is ready\n`,
      });
    // functions keys reads --data-dir as every command does: =DIR too; its own words are checked first.
    expect(equalsForm).toMatchObject({
      status: 1,
      stderr: `taskstack: the stack on ${dir} (pid ${process.pid}) is still starting: try again once it is ready\n`,
    });
    for (const { status, stdout, stderr, refusal } of refused)
      expect({ status, stdout, firstLine: stderr.split('\n')[0] }).toEqual({
        status: 1,
        stdout: '',
        firstLine: `taskstack: ${refusal}`,
      });
    expect(existsSync(join(dir, 'state'))).toBe(true);
    rmSync(join(dir, 'stack.lock'));
    expect(await run(['reset', '--data-dir', dir])).toMatchObject({ status: 0, stdout: `removed ${dir}\n` });
    expect(existsSync(dir)).toBe(false);
    expect(await run(['reset', '--data-dir', dir])).toMatchObject({
      status: 0,
      stdout: `nothing to remove: ${dir} does not exist\n`,
    });
  });
});

describe.concurrent('commands against a stack that does not answer', () => {
  const data = testDataDir();
  afterAll(data.remove);

  it('a stack.json left by a launcher whose pid now names another process (a reboot) is no stack', async () => {
    const dir = join(data.dir, 'rebooted');
    mkdirSync(dir);
    // This test's own process, alive, as the process its pid now names; no launcher holds the directory.
    writeFileSync(
      join(dir, 'stack.json'),
      JSON.stringify({ pid: process.pid, controlUrl: 'http://127.0.0.1:1' }),
    );
    const commands = [['status'], ['clock', 'advance', '--minutes', '1'], ['functions', 'keys', 'list']];
    for (const result of await runEach(commands, dir))
      expect(result).toMatchObject({
        status: 1,
        stdout: '',
        stderr: `taskstack: no stack is running on ${dir}\n`,
      });
  });

  it("taskstack stop of another user's stack says so in one line", async () => {
    // Root may signal anyone: as root, the CLI runs as nobody against this process; otherwise against init.
    const dir = mkdtempSync(join(tmpdir(), 'taskstack-other-'));
    try {
      chmodSync(dir, 0o755);
      const holder = asRoot ? process.pid : 1;
      writeFileSync(join(dir, 'stack.lock'), String(holder), { mode: 0o644 });
      const { status, stdout, stderr } = await runAsOther(['stop', '--data-dir', dir]);
      expect({ status, stdout, stderr }).toEqual({
        status: 1,
        stdout: '',
        stderr: `taskstack: the stack on ${dir} (pid ${holder}) is another user's: stop it as that user (EPERM)\n`,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a launcher whose control API is gone (stopping) gets one line, not a stack trace', async () => {
    const dir = join(data.dir, 'stopping');
    mkdirSync(dir);
    const port = await freePort();
    const controlUrl = `http://127.0.0.1:${port}`;
    writeFileSync(join(dir, 'stack.lock'), String(process.pid));
    writeFileSync(join(dir, 'stack.json'), JSON.stringify({ pid: process.pid, controlUrl, masterKey: 'k' }));
    const prefixes = ['', '', 'functions keys list: '];
    const results = await runEach(
      [['status'], ['clock', 'advance', '--minutes', '1'], ['functions', 'keys', 'list']],
      dir,
    );
    for (const [i, result] of results.entries())
      expect(result).toMatchObject({
        status: 1,
        stdout: '',
        stderr: `taskstack: ${prefixes[i]}the control API at ${controlUrl} does not answer (connect ECONNREFUSED 127.0.0.1:${port}): is the stack stopping?\n`,
      });
  });
});

describe('commands against a running stack', () => {
  const data = testDataDir();
  afterAll(data.remove);

  // With fetch, each command waited 70–200 ms after its answer before exiting: V8 compiles undici's
  // WebAssembly HTTP parser again in the background, and Node waits for that at exit. node:http has no
  // such parser. Run with fetch removed, the command shows it does not use it.
  it('status asks the control API without fetch, and prints what it answers', async () => {
    const server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(req.url === '/health' ? { blob: 'ok' } : { error: 'not found' }));
    });
    const port = await listen(server, 0);
    try {
      const dir = join(data.dir, 'running');
      mkdirSync(dir);
      writeFileSync(join(dir, 'stack.lock'), String(process.pid));
      const controlUrl = `http://127.0.0.1:${port}`;
      writeFileSync(
        join(dir, 'stack.json'),
        JSON.stringify({ pid: process.pid, controlUrl, masterKey: 'k' }),
      );
      const { stdout, stderr } = await execFileAsync(
        process.execPath,
        ['--no-experimental-fetch', ...cli('status', '--data-dir', dir)],
        { env: withoutTestCa(process.env) },
      );
      expect({ stdout, stderr }).toEqual({ stdout: '{\n  "blob": "ok"\n}\n', stderr: '' });
    } finally {
      await close(server);
    }
  });
});

describe.concurrent('taskstack reset never removes what holds the working directory or the project', () => {
  const data = testDataDir();
  afterAll(data.remove);
  /** A working directory with a file of the user's in it, and the CLI run there. */
  const userFolder = () => {
    const cwd = join(data.dir, 'work', 'sub');
    mkdirSync(cwd, { recursive: true });
    writeFileSync(join(cwd, 'notes.txt'), 'mine');
    const runIn = (args: string[], env: NodeJS.ProcessEnv = {}) => run(args, env, { cwd });
    return { cwd, runIn };
  };
  const EMPTY =
    'the data directory is empty (--data-dir "" or TASKSTACK_DATA_DIR=""), which would be the working directory: name one, or give neither for the project\'s .taskstack';

  it.each([
    ['TASKSTACK_DATA_DIR=""', ['reset'], { TASKSTACK_DATA_DIR: '' }],
    ['--data-dir ""', ['reset', '--data-dir', ''], {}],
    ['--data-dir "" (status)', ['status', '--data-dir', ''], {}],
  ])('an empty data directory (%s) is refused, not taken for the working directory', async (_, args, env) => {
    const { cwd, runIn } = userFolder();
    expect(await runIn(args, env)).toMatchObject({ status: 1, stdout: '', stderr: `taskstack: ${EMPTY}\n` });
    expect(existsSync(join(cwd, 'notes.txt'))).toBe(true);
  });

  it('an empty TASKSTACK_DATA_DIR is refused by start() too', () => {
    const fromEnv = process.env.TASKSTACK_DATA_DIR;
    process.env.TASKSTACK_DATA_DIR = '';
    try {
      expect(() => parseStackOptions()).toThrow(EMPTY);
      expect(() => parseStackOptions({ dataDir: '' })).toThrow(EMPTY);
    } finally {
      if (fromEnv === undefined) delete process.env.TASKSTACK_DATA_DIR;
      else process.env.TASKSTACK_DATA_DIR = fromEnv;
    }
  });

  it.each([
    ['.', (cwd: string) => cwd],
    ['..', (cwd: string) => join(cwd, '..')],
  ])('--data-dir %s: refused, naming what it holds', async (dir, resolved) => {
    const { cwd, runIn } = userFolder();
    expect(await runIn(['reset', '--data-dir', dir])).toMatchObject({
      status: 1,
      stdout: '',
      stderr: `taskstack: not removing ${resolved(cwd)}: it holds the working directory ${cwd}; name the data directory itself\n`,
    });
    expect(existsSync(join(cwd, 'notes.txt'))).toBe(true);
  });

  it('a file, or a folder that is no data directory, is refused and kept (a mistyped --data-dir src)', async () => {
    const { cwd, runIn } = userFolder();
    mkdirSync(join(cwd, 'src'), { recursive: true });
    writeFileSync(join(cwd, 'src', 'app.ts'), 'mine');
    const [file, folder] = await Promise.all([
      runIn(['reset', '--data-dir', 'notes.txt']),
      runIn(['reset', '--data-dir', 'src']),
    ]);
    expect(file).toMatchObject({
      status: 1,
      stdout: '',
      stderr: `taskstack: not removing ${join(cwd, 'notes.txt')}: it is not a directory; name the data directory itself\n`,
    });
    expect(folder).toMatchObject({
      status: 1,
      stdout: '',
      stderr: `taskstack: not removing ${join(cwd, 'src')}: it is not a data directory (no keys.json, no .gitignore made by taskstack); name the data directory itself\n`,
    });
    expect(existsSync(join(cwd, 'notes.txt'))).toBe(true);
    expect(existsSync(join(cwd, 'src', 'app.ts'))).toBe(true);
    // An empty folder (a start that failed at once) and one a start marked are data directories.
    mkdirSync(join(cwd, 'empty'));
    expect(await runIn(['reset', '--data-dir', 'empty'])).toMatchObject({ status: 0, stderr: '' });
    expect(existsSync(join(cwd, 'empty'))).toBe(false);
  });

  it('a data directory this user may not remove: one line, no stack trace', async () => {
    // Root may remove anything: as root, the CLI runs as nobody; otherwise the parent is made read-only.
    const parent = mkdtempSync(join(tmpdir(), 'taskstack-reset-'));
    const dir = join(parent, 'data');
    mkdirSync(dir);
    writeFileSync(join(dir, 'keys.json'), '{}');
    chmodSync(parent, 0o555);
    try {
      const { status, stdout, stderr } = await runAsOther(['reset', '--data-dir', dir]);
      expect({ status, stdout }).toEqual({ status: 1, stdout: '' });
      expect(stderr).toBe(`taskstack: cannot remove ${dir}: this user may not (EACCES)\n`);
      expect(existsSync(join(dir, 'keys.json'))).toBe(true);
    } finally {
      chmodSync(parent, 0o755);
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('the project, the home directory and / are refused (checked without removing anything)', () => {
    const project = resolve(repositoryRoot);
    const places = { cwd: '/somewhere/else', project, home: '/home/me' };
    expect(removalRefusal(project, places)).toBe(`it holds the project ${project}`);
    expect(removalRefusal(dirname(project), places)).toBe(`it holds the project ${project}`);
    expect(removalRefusal('/home/me', places)).toBe('it holds the home directory /home/me');
    expect(removalRefusal('/', places)).toBe('it holds the working directory /somewhere/else');
    expect(removalRefusal(join(project, '.taskstack'), places)).toBeUndefined();
    expect(removalRefusal('/home/me/..data', places)).toBeUndefined();
  });
});

describe('npm run taskstack (the CLI without npx reading the whole installed tree first)', () => {
  it('runs the same command line', async () => {
    const { status, stdout } = spawnSync('npm', ['run', '-s', 'taskstack', '--', 'help'], {
      encoding: 'utf8',
      env: withoutTestCa(process.env),
    });
    expect(status).toBe(0);
    expect(stdout).toBe((await help()).stdout);
  });
});

describe.concurrent('taskstack refuses, in one line', () => {
  const data = testDataDir();
  afterAll(data.remove);
  const portCount = Object.keys(stackPorts(loadApps())).length;
  it.each([
    [['nope'], `unknown command nope; ${HINT}`],
    [['start', '--bogus'], `Unknown option '--bogus'; ${HINT}`],
    [['--bogus'], `Unknown option '--bogus'; ${HINT}`],
    [['start', '--data-dir'], `Option '--data-dir <value>' argument missing; ${HINT}`],
    [['stop', 'now'], `unexpected argument now; ${HINT}`],
    [['clock', 'advance', 'soon', '--days', '1'], `unexpected argument soon; ${HINT}`],
    [['clock', 'advance', '--minutes', '-1'], `Option '--minutes' argument is ambiguous; ${HINT}`],
    [['clock', 'advance', '--minutes', '0x10'], '--minutes must be a number ≥ 0, not 0x10'],
    [['clock', 'advance', '--hours', '1e3'], '--hours must be a number ≥ 0, not 1e3'],
    [['clock', 'advance', '--days', 'Infinity'], '--days must be a number ≥ 0, not Infinity'],
    [['clock', 'advance', '--seconds', '1.'], '--seconds must be a number ≥ 0, not 1.'],
    [['scenario', 'run'], 'usage: taskstack scenario run <name|all> [--target FILE]'],
    [['scenario', 'run', '--target', 'x.json'], 'usage: taskstack scenario run <name|all> [--target FILE]'],
    [['start', '--port-base', 'abc'], '--port-base must be a port number from 1 to 65535, not abc'],
    [['start', '--port-base', '0'], '--port-base must be a port number from 1 to 65535, not 0'],
    [['start', '--web-port', '99999'], '--web-port must be a port number from 1 to 65535, not 99999'],
    [['start', '--blob-port', '1.5'], '--blob-port must be a port number from 1 to 65535, not 1.5'],
    [
      ['start', '--free-ports', '--port-base', '9000'],
      `--free-ports and --port-base choose the same ports: give one of them; ${HINT}`,
    ],
    [['start', '--components', ''], "--components takes component names separated by commas, not ''"],
    [
      ['start', '--encryption-key', '', '--data-dir', data.dir],
      'the EncryptionKey is empty (--encryption-key "" or TASKSTACK_ENCRYPTION_KEY=""): give its text, or neither for a random one per data directory',
    ],
    [
      ['start', '--components', 'blob,,cosmos'],
      "--components takes component names separated by commas, not 'blob,,cosmos'",
    ],
    [
      ['start', '--port-base', '65530', '--data-dir', data.dir],
      `port base 65530 is too high: the stack needs ${portCount} ports from it; choose at most ${65536 - portCount} (--port-base)`,
    ],
  ])('%s', async (args, line) => {
    const { status, stdout, stderr } = await run(args);
    expect({ status, stdout, stderr }).toEqual({ status: 1, stdout: '', stderr: `taskstack: ${line}\n` });
  });

  it('a mistyped --components name is said first: before a busy port, and with nothing made', async () => {
    const busy = createServer();
    const port = await listen(busy, await freePort());
    try {
      const dir = join(data.dir, 'typo');
      const names = [...serviceNames, ...Object.keys(loadApps())].join(', ');
      expect(
        await run(['start', '--components', 'cosmo', '--data-dir', dir, '--control-port', String(port)]),
      ).toMatchObject({
        status: 1,
        stdout: '',
        stderr: `taskstack: unknown component(s) cosmo; known: ${names}\n`,
      });
      expect(existsSync(dir)).toBe(false);
    } finally {
      await close(busy);
    }
  });

  it('a data directory with a file in its place (or in its path) is named as such', async () => {
    const file = join(data.dir, 'notes.txt');
    writeFileSync(file, 'mine');
    const dirs = [file, join(file, 'data')];
    const results = await Promise.all(dirs.map((dir) => run(['start', '--data-dir', dir, '--free-ports'])));
    for (const [i, dir] of dirs.entries())
      expect(results[i]).toMatchObject({
        status: 1,
        stdout: '',
        stderr: `taskstack: cannot use ${dir} as the data directory (a file is in its way); name another with --data-dir or TASKSTACK_DATA_DIR\n`,
      });
  });

  /** A target file that names nothing: enough for a command to get past reading its target. */
  function emptyTarget() {
    const file = join(data.dir, 'empty-target.json');
    writeFileSync(file, '{}');
    return file;
  }

  it.each([
    [
      ['conformance'],
      `no stack is running on ${data.dir}: start one (npm start), or name one with --target FILE`,
    ],
    [['scenario', 'run', 'all', 'extra'], `Unexpected argument 'extra'; ${TARGET_OPTIONS}`],
    [
      ['scenario', 'run', 'nope', '--target', emptyTarget()],
      `no scenario nope; choose all or one of: ${SCENARIOS.map((scenario) => scenario.name).join(', ')}`,
    ],
  ])('%s: exit 2', async (args, line) => {
    const { status, stdout, stderr } = await run(args, { TASKSTACK_DATA_DIR: data.dir });
    const command = args[0] === 'scenario' ? 'scenario run' : 'conformance';
    expect({ status, stdout, stderr }).toEqual({
      status: 2,
      stdout: '',
      stderr: `taskstack ${command}: ${line}\n`,
    });
  });

  it('conformance and scenario run: what they take besides a target, and a target they cannot read', () => {
    const env = { TASKSTACK_DATA_DIR: data.dir };
    expect(() => commandLineTarget(['--bogus'], env)).toThrow(`Unknown option '--bogus'; ${TARGET_OPTIONS}`);
    expect(() => commandLineTarget(['--target', 'a.json', 'b.json'], env)).toThrow(
      `Unexpected argument 'b.json'; ${TARGET_OPTIONS}`,
    );
    expect(() => commandLineTarget(['--target', ''], env)).toThrow(
      `--target needs a file; ${TARGET_OPTIONS}`,
    );
    expect(() => commandLineTarget(['--target'], env)).toThrow(
      `Option '--target <value>' argument missing; ${TARGET_OPTIONS}`,
    );
    const none = join(data.dir, 'none.json');
    for (const args of [['--target', none], [`--target=${none}`]])
      expect(() => commandLineTarget(args, env)).toThrow(
        `target ${none} cannot be read as JSON: ENOENT: no such file or directory, open '${none}'`,
      );
    expect(() => commandLineTarget([], env)).toThrow(`no stack is running on ${data.dir}`);
    // The data directory as every taskstack command takes it, over TASKSTACK_DATA_DIR.
    const other = join(data.dir, 'other');
    for (const args of [['--data-dir', other], [`--data-dir=${other}`]])
      expect(() => commandLineTarget(args, env)).toThrow(`no stack is running on ${other}`);
  });

  it('conformance and scenario run trust the CA of the data directory their target names', () => {
    const write = (name: string, description: object) => {
      const file = join(data.dir, name);
      writeFileSync(file, JSON.stringify(description));
      return file;
    };
    const local = write('local.json', { dataDir: data.dir, baseUrl: 'http://127.0.0.1:7071' });
    expect(readTarget(local).ca).toBe(join(data.dir, 'ca', 'ca.pem'));
    expect(readTarget(write('azure.json', { baseUrl: 'https://x.azurewebsites.net' })).ca).toBeUndefined();
    const empty = join(data.dir, 'empty');
    mkdirSync(empty);
    expect(readTarget(write('no-ca.json', { dataDir: empty })).ca).toBeUndefined();
  });

  it('a failed request says why, not only "fetch failed"', async () => {
    const port = await freePort();
    const refused = await fetch(`http://127.0.0.1:${port}/`).catch((error: unknown) => error);
    expect(reasonOf(refused)).toBe(`fetch failed: connect ECONNREFUSED 127.0.0.1:${port}`);
    const untrusted = new Error('fetch failed', {
      cause: new Error('self-signed certificate in certificate chain'),
    });
    expect(reasonOf(untrusted)).toBe('fetch failed: self-signed certificate in certificate chain');
    expect(reasonOf('text')).toBe('text');
  });

  it("the data directory: the project's .taskstack from any of its folders, as npm start; given ones from the working directory", () => {
    const [cwd, fromEnv] = [process.cwd(), process.env.TASKSTACK_DATA_DIR];
    delete process.env.TASKSTACK_DATA_DIR;
    try {
      process.chdir(join(repositoryRoot, 'system', 'functions'));
      expect(parseStackOptions().dataDir).toBe(join(repositoryRoot, '.taskstack'));
      expect(parseStackOptions({ dataDir: 'mine' }).dataDir).toBe(join(process.cwd(), 'mine'));
      process.env.TASKSTACK_DATA_DIR = 'ours';
      expect(parseStackOptions().dataDir).toBe(join(process.cwd(), 'ours'));
    } finally {
      process.chdir(cwd);
      if (fromEnv === undefined) delete process.env.TASKSTACK_DATA_DIR;
      else process.env.TASKSTACK_DATA_DIR = fromEnv;
    }
  });

  it('start(): wrong options are named, each with its path', () => {
    expect(() => parseStackOptions({ ports: { base: 70000 }, portOverrides: { web: 0 } })).toThrow(
      'invalid stack options: ✖ Too big: expected number to be <=65535\n  → at ports.base\n' +
        '✖ Too small: expected number to be >=1\n  → at portOverrides.web',
    );
  });
});
