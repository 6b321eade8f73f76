import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import { start } from './launcher.ts';
import { lockHolder } from './stackfile.ts';
import { runCli } from './test-support.ts';

const data = testDataDir();
/** The data directory of the test that runs beside the others (with the run's CA and signing key, as data's). */
const withoutBlob = testDataDir();
afterAll(() => {
  data.remove();
  withoutBlob.remove();
});

/** A stack of the vault alone (on the file's data directory unless told): a start that takes its lock. */
const startVaultAlone = (dataDir = data.dir) =>
  start({ dataDir, ports: 'free', components: ['keyvault'], console: false });

/** This process's children that run a component (the test starts the stack in-process). */
function componentProcesses(): string[] {
  return readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .flatMap((pid) => {
      try {
        const ppid = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1];
        const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
        return Number(ppid) === process.pid && command.includes('run-cached.cjs') ? [command] : [];
      } catch {
        return []; // gone meanwhile
      }
    });
}

// The apps' processes are forked while the services start (they load their code meanwhile): one that
// fails to start must take down those forked for apps still waiting (functions waits for Azurite, the
// slowest service to start; web, failing here, does not). Only those three: every process is forked
// ahead the same way, and the other services' starts were the test's cost, not its subject.
it('leaves no process behind when an app fails to start', async () => {
  const attempt = start({
    dataDir: data.dir,
    ports: 'free',
    components: ['blob', 'functions', 'web'],
    settings: { web: { WebAppVariant: 'C' } },
    console: false,
  });
  await expect(attempt).rejects.toThrow('web failed to start');
  // Named when one is left: the failure says which component it runs.
  await waitFor('every forked process to exit', () => componentProcesses().length === 0, 10_000).catch(
    () => undefined,
  );
  expect(componentProcesses()).toEqual([]);
  // Nor the data directory's lock: the next start may go ahead.
  expect(lockHolder(data.dir)).toBeUndefined();
});

// The tests after the first run beside the one that waits out the Functions host's storage retries (its
// start fails after ~3–5 s of them, as the runtime's does without its storage), on a data directory of its
// own. Not beside the first: it reads every component process of this process.
describe.concurrent('after the first', () => {
  it('names the components an app needs that were not asked for, when it fails to start without them', async () => {
    // The Functions host keeps its keys in blob storage: without Azurite its start fails.
    const attempt = start({
      dataDir: withoutBlob.dir,
      ports: 'free',
      components: ['functions'],
      console: false,
    });
    await expect(attempt).rejects.toThrow(
      /^functions failed to start: .+ \(not running, though its settings name them: blob, eventhubs, cosmos, keyvault, eventgrid, identity\)$/,
    );
  });

  describe.sequential('one after another', () => {
    it('refuses a second start on the same data directory while the first is still starting', async () => {
      // Both at once: stack.json, which a running stack writes, does not exist yet.
      const [first, second] = await Promise.allSettled([startVaultAlone(), startVaultAlone()]);
      expect(first.status).toBe('fulfilled');
      expect(second).toEqual({
        status: 'rejected',
        reason: new Error(`a stack is already running on ${data.dir} (pid ${process.pid}); stop it first`),
      });
      expect(lockHolder(data.dir)).toBe(process.pid);
      if (first.status === 'fulfilled') await first.value.stop();
      expect(lockHolder(data.dir)).toBeUndefined();
      expect(existsSync(join(data.dir, 'stack.lock'))).toBe(false);
    });

    it('takes the data directory over from a launcher that died holding it', async () => {
      const gone = spawnSync(process.execPath, ['-e', '']).pid;
      writeFileSync(join(data.dir, 'stack.lock'), String(gone));
      const stack = await startVaultAlone();
      expect(lockHolder(data.dir)).toBe(process.pid);
      await stack.stop();
    });

    it('takes the data directory over from a lock whose pid now names another process (a pid reused after a reboot)', async () => {
      const other = spawn('sleep', ['60']);
      try {
        const pid = other.pid as number;
        const started = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[19];
        writeFileSync(join(data.dir, 'stack.lock'), `${pid} ${started}`);
        expect(lockHolder(data.dir)).toBe(pid);
        // The same pid, another start time: not the process that took the lock.
        writeFileSync(join(data.dir, 'stack.lock'), `${pid} 1`);
        expect(lockHolder(data.dir)).toBeUndefined();
        const stop = await runCli(['stop', '--data-dir', data.dir]);
        expect(stop).toMatchObject({ status: 1, stderr: `taskstack: no stack is running on ${data.dir}\n` });
        const stack = await startVaultAlone();
        expect(lockHolder(data.dir)).toBe(process.pid);
        await stack.stop();
        expect(other.exitCode).toBeNull();
      } finally {
        other.kill();
      }
    });

    it('reports as failed only the component that failed, not one its failure stopped during its own start', async () => {
      const appsFile = join(data.dir, 'apps.json');
      const app = { kind: 'webapp', folder: 'emulators/appservice/test/app' };
      const apps = {
        crashing: { ...app, localPort: 5091, settings: { CRASH_AT_START: 'true' } },
        // Still starting (App Service waits for it to listen) when the other fails: it is stopped then.
        waiting: { ...app, localPort: 5092, settings: { LISTEN: 'never' } },
      };
      writeFileSync(appsFile, JSON.stringify({ apps }));
      const written: string[] = [];
      const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
        written.push(String(chunk));
        return true;
      });
      try {
        const attempt = start({
          dataDir: data.dir,
          ports: 'free',
          appsFile,
          components: Object.keys(apps),
          console: true,
        });
        await expect(attempt).rejects.toThrow('crashing failed to start');
      } finally {
        write.mockRestore();
      }
      const lines = written.join('').split('\n');
      expect(lines).toContainEqual(expect.stringMatching(/^… waiting +starting$/));
      expect(lines.filter((line) => line.startsWith('✘'))).toEqual([
        expect.stringMatching(/^✘ crashing +failed .*this app refuses to start/),
      ]);
    });

    it("runs on when a component's log cannot be written (a full disk, a directory in its place): said once, on the console", async () => {
      const dir = join(data.dir, 'unwritable-log');
      mkdirSync(join(dir, 'logs', 'keyvault.log'), { recursive: true });
      const written: string[] = [];
      const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
        written.push(String(chunk));
        return true;
      });
      try {
        const stack = await start({ dataDir: dir, ports: 'free', components: ['keyvault'], console: true });
        expect(await stack.health()).toEqual({ keyvault: 'ok' });
        await stack.stop();
      } finally {
        write.mockRestore();
      }
      const lines = written.join('').split('\n');
      expect(lines.filter((line) => line.includes('cannot be written'))).toEqual([
        expect.stringMatching(
          /^keyvault +\| .*\/logs\/keyvault\.log cannot be written \(EISDIR: .*\): console only$/,
        ),
      ]);
    });

    it('lets a fresh data directory go only once its signing key is stored, when the start is refused at once', async () => {
      // The key takes 100–500 ms of CPU to make; a port already taken refuses the start within milliseconds.
      const dir = join(data.dir, 'refused-at-once');
      const squatter = createServer();
      await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
      const { port } = squatter.address() as AddressInfo;
      try {
        const attempt = start({
          dataDir: dir,
          ports: 'free',
          portOverrides: { keyvault: port },
          components: ['keyvault'],
          console: false,
        });
        await expect(attempt).rejects.toThrow(`port ${port} for keyvault is already in use`);
      } finally {
        squatter.close();
      }
      // Nothing writes to the directory once the start has let it go: the key is already there.
      expect(JSON.parse(readFileSync(join(dir, 'keys.json'), 'utf8')).signingKey).toBeDefined();
    });

    it('names a damaged JSON file of the data directory when it stops the start', async () => {
      const dir = join(data.dir, 'damaged-keys');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'keys.json'), '{"broken": ');
      await expect(startVaultAlone(dir)).rejects.toThrow(`${join(dir, 'keys.json')} is not valid JSON (`);
    });

    it('says a damaged JSON file in one line, the text it quotes escaped', async () => {
      const dir = join(data.dir, 'damaged-keys-lines');
      mkdirSync(dir, { recursive: true });
      // V8's message quotes the start of the text, its newline too.
      writeFileSync(join(dir, 'keys.json'), 'garbage\n');
      const failed = await startVaultAlone(dir).then(
        () => new Error('started'),
        (error: Error) => error,
      );
      expect(failed.message).toMatch(
        new RegExp(`^${join(dir, 'keys.json')} is not valid JSON \\(.*"garbage\\\\x0A".*\\)$`),
      );
    });
  });
});
