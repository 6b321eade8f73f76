import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, describe, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { componentNames } from '../registry.ts';
import { CONTROL_KEY_HEADER } from './control.ts';
import { type Stack, start } from './launcher.ts';
import { stackFilePath } from './stackfile.ts';

const data = testDataDir();
afterAll(() => data.remove());

/** Every port the stack's endpoints name. */
const portsOf = (endpoints: Record<string, Record<string, string>>) =>
  Object.values(endpoints)
    .flatMap((named) => Object.values(named))
    .filter((value) => /^\w+:\/\/127\.0\.0\.1:\d+/.test(value))
    .map((url) => Number(new URL(url).port));
/** `node --import tsx cli.ts …`: the CLI as `npm start` runs it. */
const cli = (...args: string[]) => ['--import', 'tsx', join(import.meta.dirname, 'cli.ts'), ...args];
const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(!socket.destroy()));
    socket.once('error', () => resolve(false));
  });
const alive = (pid: number | undefined) => {
  try {
    return pid !== undefined && process.kill(pid, 0);
  } catch {
    return false;
  }
};
const readStackFile = () => JSON.parse(readFileSync(stackFilePath(data.dir), 'utf8'));

describe('the launcher', () => {
  let stack: Stack;

  it('starts every component and describes them in stack.json once healthy', async () => {
    stack = await start({ dataDir: data.dir, ports: 'free', console: false });
    const file = readStackFile();
    expect(statSync(stackFilePath(data.dir)).mode & 0o777).toBe(0o600);
    for (const field of ['authUrl', 'functionKey', 'masterKey', 'subscriptionKey', 'controlUrl', 'logs']) {
      expect(file[field], field).toBeTruthy();
    }
    expect(Object.keys(file.connections)).toEqual(
      expect.arrayContaining(['StorageConnection', 'AzureWebJobsStorage', 'DocumentDbConnection']),
    );
    expect(Object.keys(file.secrets).sort()).toEqual(['DocumentDbConnection', 'EncryptionKey']);
    expect(Object.keys(file.endpoints).sort()).toEqual([...componentNames].sort());
    for (const path of Object.values(file.logs as Record<string, string>))
      expect(existsSync(path), path).toBe(true);
    expect(await stack.health()).toEqual(Object.fromEntries(componentNames.map((name) => [name, 'ok'])));

    // Each address answers on the wire.
    const urls = Object.values(file.endpoints as Record<string, Record<string, string>>)
      .flatMap((endpoints) => Object.values(endpoints))
      .filter((value) => /^https?:\/\//.test(value));
    for (const url of urls) expect(await fetch(url).then((r) => r.status), url).toBeGreaterThanOrEqual(200);
  });

  it('serves the control API only with the master key, and moves the clock for every component', async () => {
    const { controlUrl, masterKey } = stack.description;
    expect((await fetch(`${controlUrl}/clock`)).status).toBe(401);
    expect((await fetch(`${controlUrl}/clock`, { headers: { [CONTROL_KEY_HEADER]: 'wrong' } })).status).toBe(
      401,
    );
    const before = stack.clock.now();
    const moved = await fetch(`${controlUrl}/clock/advance`, {
      method: 'POST',
      headers: { [CONTROL_KEY_HEADER]: masterKey },
      body: JSON.stringify({ minutes: 5 }),
    });
    expect(moved.status).toBe(200);
    expect(Date.parse((await moved.json()).now) - before).toBeGreaterThanOrEqual(5 * 60_000);
    const bad = await fetch(`${controlUrl}/clock/advance`, {
      method: 'POST',
      headers: { [CONTROL_KEY_HEADER]: masterKey },
      body: '{"minutes": -1}',
    });
    expect(bad.status).toBe(400);
    const garbage = await fetch(`${controlUrl}/clock/advance`, {
      method: 'POST',
      headers: { [CONTROL_KEY_HEADER]: masterKey },
      body: '{',
    });
    expect(garbage.status).toBe(400);
    const unknown = await fetch(`${controlUrl}/no/such/thing`, {
      headers: { [CONTROL_KEY_HEADER]: masterKey },
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'no control operation GET /no/such/thing' });
    const noAction = await fetch(`${controlUrl}/components/blob/noSuchAction`, {
      method: 'POST',
      headers: { [CONTROL_KEY_HEADER]: masterKey },
    });
    expect(noAction.status).toBe(404);
    expect(await noAction.json()).toEqual({ error: 'no action noSuchAction' });
    const noComponent = await fetch(`${controlUrl}/components/nothing/runLifecycle`, {
      method: 'POST',
      headers: { [CONTROL_KEY_HEADER]: masterKey },
    });
    expect(noComponent.status).toBe(404);
  });

  it('restarts a component that dies', async () => {
    const before = stack.pids().blob;
    process.kill(before as number, 'SIGKILL');
    await expect
      .poll(() => stack.pids().blob !== before && alive(stack.pids().blob), { timeout: 15_000 })
      .toBe(true);
    await expect.poll(async () => (await stack.health()).blob, { timeout: 15_000 }).toBe('ok');
  });

  it('stops everything: each component exits by itself, nothing left listening or running, stack.json gone', async () => {
    const container = BlobServiceClient.fromConnectionString(
      stack.description.connections.StorageConnection as string,
    ).getContainerClient('kept');
    await container.createIfNotExists();
    await container.getBlockBlobClient('a.txt').upload('kept', 4);

    const ports = portsOf(stack.description.endpoints);
    const pids = Object.values(stack.pids());
    await stack.stop();
    expect(existsSync(stackFilePath(data.dir))).toBe(false);
    for (const port of ports) expect(await accepts(port), `port ${port}`).toBe(false);
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
    // None had to be killed: the functions host (its Event Hubs listener releases its partitions in
    // blob storage) stops before the components it depends on.
    for (const [name, path] of Object.entries(stack.description.logs))
      expect(readFileSync(path, 'utf8'), name).not.toContain('did not stop within');
  });

  it('keeps data across a restart on the same data directory', async () => {
    stack = await start({ dataDir: data.dir, ports: 'free', console: false });
    const blob = BlobServiceClient.fromConnectionString(
      stack.description.connections.StorageConnection as string,
    )
      .getContainerClient('kept')
      .getBlobClient('a.txt');
    expect((await blob.downloadToBuffer()).toString()).toBe('kept');
    await stack.stop();
  });

  it('fails fast on a busy port, naming the port and the component', async () => {
    const squatter: Server = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const port = (squatter.address() as { port: number }).port;
    const attempt = start({
      dataDir: data.dir,
      ports: 'free',
      portOverrides: { cosmos: port },
      console: false,
    });
    await expect(attempt).rejects.toThrow(`port ${port} for cosmos is already in use`);
    squatter.close();
    expect(existsSync(stackFilePath(data.dir))).toBe(false);
  });

  it('`taskstack start` stops cleanly on SIGINT', async () => {
    const started = spawn(process.execPath, cli('start', '--data-dir', data.dir, '--free-ports'), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk;
    };
    started.stdout.on('data', collect);
    started.stderr.on('data', collect);
    await expect.poll(() => output, { timeout: 20_000 }).toContain('taskstack is ready');
    const ports = portsOf(readStackFile().endpoints);
    expect(ports.length).toBeGreaterThanOrEqual(componentNames.length);

    // While it runs, the same CLI lists the host keys, as `az functionapp keys list` would.
    const keys = spawnSync(process.execPath, cli('functions', 'keys', 'list', '--data-dir', data.dir), {
      encoding: 'utf8',
    });
    expect(keys.status, keys.stderr).toBe(0);
    expect(JSON.parse(keys.stdout)).toMatchObject({
      functionKeys: { default: readStackFile().functionKey },
      masterKey: readStackFile().masterKey,
    });

    const exited = new Promise<number | null>((resolve) => started.once('exit', resolve));
    started.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(output).toContain('stopped.');
    expect(existsSync(stackFilePath(data.dir))).toBe(false);
    for (const port of ports) expect(await accepts(port), `port ${port}`).toBe(false);
  });
});
