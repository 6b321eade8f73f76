/**
 * A port the launcher holds for a component is let go just before the component listens on it; another
 * process can take it in between (seen once: "blob failed to start: port 22939 is already in use").
 * Played here without timing: the test takes the port the moment the launcher lets it go.
 */
import { existsSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { CosmosClient } from '@azure/cosmos';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, afterEach, expect, it, vi } from 'vitest';
import { loadApps } from '../core/apps.ts';
import { drawnLately, freeRange, LOOPBACK, portDraw } from '../core/http.ts';
import { testDataDir } from '../core/testing.ts';
import { start } from './launcher.ts';
import { portIsFree, stackPorts } from './ports.ts';
import { stackFilePath } from './stackfile.ts';

const data = testDataDir();
const squatter = createServer();
afterAll(() => data.remove());
afterEach(() => {
  vi.restoreAllMocks();
  squatter.close();
});

/** Takes `port` with the test's own server as soon as the launcher's server holding it has closed. */
function takeWhenLetGo(port: number) {
  const close = Server.prototype.close;
  vi.spyOn(Server.prototype, 'close').mockImplementation(function (this: Server, callback) {
    const address = this.address();
    if (this === squatter || typeof address !== 'object' || address?.port !== port)
      return close.call(this, callback);
    return close.call(this, (error) => squatter.listen(port, LOOPBACK, () => callback?.(error)));
  });
}

/** Makes the launcher draw `port` for `component` (draws go in stackPorts' order, one per port). */
function drawFor(component: string, port: number) {
  const [low, high] = freeRange();
  const index = Object.keys(stackPorts(loadApps())).indexOf(component);
  let draws = 0;
  const at = (drawn: number) => (drawn - low + 0.5) / (high - low);
  // The other draws avoid ports drawn lately, which the launcher would skip with one draw more.
  const other = (): number => {
    const drawn = low + Math.floor(Math.random() * (high - low));
    return drawnLately(drawn) ? other() : at(drawn);
  };
  vi.spyOn(portDraw, 'random').mockImplementation(() => (draws++ === index ? at(port) : other()));
}

/** A free port of the range that this process has not drawn lately (its draws skip those). */
async function undrawnFreePort(): Promise<number> {
  const [low, high] = freeRange();
  for (;;) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (!drawnLately(port) && (await portIsFree(port))) return port;
  }
}

const portOf = (url: string | undefined) => Number(new URL(url ?? '').port);

it('draws a free port anew for a component whose drawn port was taken, and wires the new one everywhere', async () => {
  const taken = await undrawnFreePort();
  drawFor('cosmos', taken);
  takeWhenLetGo(taken);
  const stack = await start({
    dataDir: data.dir,
    ports: 'free',
    console: false,
    // The function app and what its managetask reaches (a start made again restarts each of them).
    components: ['identity', 'blob', 'cosmos', 'keyvault', 'functions'],
  });
  try {
    expect(squatter.listening).toBe(true);
    const { connections, secrets, endpoints, baseUrl, functionKey } = stack.description;
    const port = portOf(endpoints.cosmos?.cosmos);
    expect(port).not.toBe(taken);
    expect(portOf(connections.DocumentDbConnection__accountEndpoint)).toBe(port);
    // The vault, which starts beside Cosmos rather than after it, was seeded with the new address, and
    // the function app reads its DocumentDbConnection from the vault: a task it creates lands there.
    expect(secrets.DocumentDbConnection).toContain(`:${port}/`);
    const created = await fetch(`${baseUrl}/api/managetask`, {
      method: 'POST',
      headers: { 'x-functions-key': functionKey as string },
      body: JSON.stringify({ Title: 'on the redrawn port' }),
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    const client = new CosmosClient(connections.DocumentDbConnection as string);
    const { resource } = await client.database('TasksDB').container('Tasks').item(id, id).read();
    expect(resource?.Title).toBe('on the redrawn port');
  } finally {
    await stack.stop();
  }
});

it('draws anew for Azurite too, whose start leaves the widest gap', async () => {
  const taken = await undrawnFreePort();
  drawFor('blob', taken);
  takeWhenLetGo(taken);
  const stack = await start({ dataDir: data.dir, ports: 'free', console: false, components: ['blob'] });
  try {
    expect(squatter.listening).toBe(true);
    const storage = stack.description.connections.StorageConnection as string;
    expect(storage).not.toContain(`:${taken}/`);
    const container = BlobServiceClient.fromConnectionString(storage).getContainerClient('redrawn');
    await container.createIfNotExists();
    await container.getBlockBlobClient('a.txt').upload('a', 1);
    expect((await container.getBlockBlobClient('a.txt').downloadToBuffer()).toString()).toBe('a');
  } finally {
    await stack.stop();
  }
});

it('fails on a port the user gave, taken before its component listens, naming the component and the port', async () => {
  const taken = await undrawnFreePort();
  takeWhenLetGo(taken);
  const attempt = start({
    dataDir: data.dir,
    ports: 'free',
    portOverrides: { blob: taken },
    console: false,
    components: ['blob'],
  });
  await expect(attempt).rejects.toThrow(new Error(`blob failed to start: port ${taken} is already in use`));
  expect(existsSync(stackFilePath(data.dir))).toBe(false);
});
