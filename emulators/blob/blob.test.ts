import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorContext, RunningEmulator } from '../core/emulator.ts';
import { startEmulator, testContext, testDataDir, waitFor } from '../core/testing.ts';
import { descendants } from '../stack/test-support.ts';
import blob from './index.ts';

const DAY = 86_400_000;
const data = testDataDir();
let context: EmulatorContext;
let running: RunningEmulator;
let service: BlobServiceClient;

async function start() {
  running = await startEmulator(blob, { port: 0 }, context);
  service = BlobServiceClient.fromConnectionString(running.endpoints.connectionString as string);
}

beforeAll(async () => {
  context = await testContext(data.dir);
  await start();
});
afterAll(async () => {
  await running?.stop();
  data.remove();
});

const upload = (container: string, name: string, text: string) =>
  service
    .getContainerClient(container)
    .getBlockBlobClient(name)
    .upload(text, Buffer.byteLength(text), {
      blobHTTPHeaders: { blobContentType: 'text/plain' },
      metadata: { TaskId: 't-1' },
    });

describe('blob storage (Azurite) through @azure/storage-blob', () => {
  it('has the containers the topology declares from the start, as the Azure template creates them', async () => {
    expect(context.topology.storage.containers).toEqual(['attachments', 'tasks']);
    const names = [];
    for await (const container of service.listContainers()) names.push(container.name);
    expect(names).toEqual(['attachments', 'tasks']);
    // The app's own create-if-missing finds them.
    expect((await service.getContainerClient('attachments').createIfNotExists()).succeeded).toBe(false);
  });

  it('creates a container if missing, stores content type and metadata, lists and deletes', async () => {
    const container = service.getContainerClient('scratch');
    expect((await container.createIfNotExists()).succeeded).toBe(true);
    expect((await container.createIfNotExists()).succeeded).toBe(false);
    await upload('scratch', 't-1/notes.txt', 'hello');

    const properties = await container.getBlobClient('t-1/notes.txt').getProperties();
    expect(properties.contentType).toBe('text/plain');
    // Read back through getProperties, metadata keys arrive lower-cased (as from Azure in Node).
    expect(properties.metadata).toEqual({ taskid: 't-1' });

    const listed = [];
    for await (const item of container.listBlobsFlat({ includeMetadata: true })) listed.push(item);
    expect(listed.map((item) => [item.name, item.metadata])).toEqual([['t-1/notes.txt', { TaskId: 't-1' }]]);

    await container.deleteBlob('t-1/notes.txt');
    expect(await container.getBlobClient('t-1/notes.txt').exists()).toBe(false);
  });

  it("refuses a wrong account key with Azure's AuthenticationFailed", async () => {
    const wrong = (running.endpoints.connectionString as string).replace(
      /AccountKey=[^;]+/,
      `AccountKey=${Buffer.alloc(64).toString('base64')}`,
    );
    // A GET: the error's detail comes in the body (a HEAD's answer has none).
    const listing = BlobServiceClient.fromConnectionString(wrong).listContainers().next();
    await expect(listing).rejects.toMatchObject({
      statusCode: 403,
      code: 'AuthenticationFailed',
      details: expect.objectContaining({
        authenticationErrorDetail: expect.stringMatching(
          /^The MAC signature found in the HTTP request '[^']+' is not/,
        ),
      }),
    });
  });

  it('answers garbage with a storage error and keeps serving', async () => {
    const base = running.endpoints.blob as string;
    const garbage = await fetch(`${base}/no-such-container?restype=container`, {
      method: 'PUT',
      body: '\u0000\u0001garbage',
    });
    expect(garbage.status).toBe(403);
    expect(await garbage.text()).toContain('<Code>AuthorizationFailure</Code>');
    const huge = await fetch(`${base}?comp=list`, {
      headers: { 'x-ms-meta-big': 'x'.repeat(100_000) },
    }).catch((e: Error) => e);
    expect(huge instanceof Error ? 'closed' : huge.status).not.toBe(200);
    await service.getProperties();
  });

  it("answers an unknown container or blob with the storage service's own 404 codes", async () => {
    const missing = service.getContainerClient('no-such-container').getBlobClient('a.txt');
    await expect(missing.download()).rejects.toMatchObject({ statusCode: 404, code: 'ContainerNotFound' });
    await service.getContainerClient('attachments').createIfNotExists();
    const absent = service.getContainerClient('attachments').getBlobClient('no/such.txt');
    await expect(absent.getProperties()).rejects.toMatchObject({ statusCode: 404 });
    await expect(absent.download()).rejects.toMatchObject({ statusCode: 404, code: 'BlobNotFound' });
  });

  it('keeps data across a restart of the component', async () => {
    await service.getContainerClient('tasks').createIfNotExists();
    await upload('tasks', 'kept.json', '{"Id":"kept"}');
    await running.stop();
    await start();
    const body = await service.getContainerClient('tasks').getBlobClient('kept.json').downloadToBuffer();
    expect(body.toString()).toBe('{"Id":"kept"}');
  });

  it("names Azurite's damaged database file when it cannot start on it", async () => {
    const other = testDataDir();
    try {
      const own = await testContext(other.dir);
      const database = join(own.stateDir as string, 'azurite', '__azurite_db_blob__.json');
      mkdirSync(dirname(database), { recursive: true });
      writeFileSync(database, '{"filename": ');
      await expect(startEmulator(blob, { port: 0 }, own)).rejects.toThrow(
        new RegExp(`^${database} is not valid JSON \\([^\\n]+\\); Azurite cannot start on it$`),
      );
    } finally {
      other.remove();
    }
  });

  it('reports Azurite killed under it as a crash, naming the signal, for the launcher to restart it', async () => {
    const before = new Set(descendants(process.pid));
    const crashes: string[] = [];
    const other = testDataDir();
    const own = {
      ...(await testContext(other.dir, { inMemory: true })),
      crash: (why: string) => crashes.push(why),
    };
    const second = await startEmulator(blob, { port: 0 }, own);
    try {
      const [azurite, ...more] = descendants(process.pid).filter((pid) => !before.has(pid));
      expect(more).toEqual([]);
      process.kill(azurite as number, 'SIGKILL');
      await waitFor('the crash report', () => crashes.length > 0);
      expect(crashes).toEqual(['Azurite exited unexpectedly (SIGKILL)']);
    } finally {
      await second.stop();
      other.remove();
    }
  });

  it('ArchiveOldFiles deletes attachments older than a day, keeps newer ones and other containers', async () => {
    await service.getContainerClient('attachments').createIfNotExists();
    await upload('attachments', 'old/a.txt', 'old');
    await upload('tasks', 'old.json', '{}');
    expect((await running.actions?.runLifecycle?.(undefined)) as { deleted: string[] }).toMatchObject({
      deleted: [],
    });

    const movedAt = Date.now();
    context.clock.advance(DAY + 60_000);
    // Last-Modified comes to the second: a blob written in the second of the move counts as written
    // before it (README, Blob storage). This one is written in a later second.
    const nextSecond = Math.floor(movedAt / 1000) * 1000 + 1000;
    await waitFor('the second of the clock move to end', () => Date.now() >= nextSecond, 2000);
    await upload('attachments', 'new/b.txt', 'new');

    // The daily run is due once the clock passes a day: wait for its effect, not for time.
    const old = service.getContainerClient('attachments').getBlobClient('old/a.txt');
    await expect.poll(() => old.exists(), { timeout: 60_000 }).toBe(false);
    // The daily run may have listed the new blob or not: a run that lists it for sure keeps it too.
    await running.actions?.runLifecycle?.(undefined);
    expect(await service.getContainerClient('attachments').getBlobClient('new/b.txt').exists()).toBe(true);
    expect(await service.getContainerClient('tasks').getBlobClient('old.json').exists()).toBe(true);
    expect(await service.getContainerClient('tasks').getBlobClient('kept.json').exists()).toBe(true);
  });

  it('a run asked for while the daily one runs waits for it: both succeed, the blob deleted once', async () => {
    await upload('attachments', 'race/c.txt', 'old');
    // Moving the clock makes the daily run due at once; the run asked for here starts meanwhile.
    context.clock.advance(2 * DAY);
    const asked = (await running.actions?.runLifecycle?.(undefined)) as { deleted: string[] };
    const gone = service.getContainerClient('attachments').getBlobClient('race/c.txt');
    await expect.poll(() => gone.exists(), { timeout: 60_000 }).toBe(false);
    expect(asked.deleted.filter((name) => name === 'attachments/race/c.txt').length).toBeLessThanOrEqual(1);
  });
});
