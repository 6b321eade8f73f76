/** Blob and Cosmos DB input bindings, against Azurite and the Cosmos emulator, values in context.extraInputs. */
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import { type Container, CosmosClient } from '@azure/cosmos';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { close, listen } from '../core/http.ts';
import { testContext, testDataDir, waitFor } from '../core/testing.ts';
import { NO_IDENTITY } from '../cosmos/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { appPath, readLog } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let blob: ComponentUnderTest;
let cosmos: ComponentUnderTest;
let host: ComponentUnderTest;
let client: CosmosClient;
let tasks: Container;
let storage: BlobServiceClient;

const get = async (path: string) => {
  const response = await fetch(`${host.endpoints.baseUrl}/api/${path}`);
  return { status: response.status, body: response.status === 200 ? await response.json() : null };
};

/**
 * Azurite behind a proxy that rewrites `notes/changing.txt`, one byte longer, after reading each answer
 * about it from Azurite and before passing it on: a reader that makes two requests (properties, then the
 * content) sees two versions.
 */
let rewrites = 0;
const proxy = createServer((req, res) => {
  const { hostname, port } = new URL(blob.endpoints.blob as string);
  const upstream = request(
    { hostname, port, path: req.url, method: req.method, headers: req.headers },
    async (answer) => {
      const chunks: Buffer[] = [];
      for await (const chunk of answer) chunks.push(chunk as Buffer);
      if (req.url?.includes('/notes/changing.txt'))
        await put('notes', 'changing.txt', `v${++rewrites}`.padEnd(rewrites + 9, '.'));
      res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(chunks));
    },
  );
  req.pipe(upstream);
});

beforeAll(async () => {
  // One after the other: the first start creates the data directory's keys, which the second reads.
  blob = await startComponent('blob', { port: 0 }, data.dir);
  cosmos = await startComponent('cosmos', { port: 0, ...NO_IDENTITY }, data.dir);
  const { secrets } = await testContext(data.dir);
  const endpoint = cosmos.endpoints.cosmos as string;
  client = new CosmosClient({
    endpoint,
    key: secrets.cosmosKey,
    connectionPolicy: { enableEndpointDiscovery: false },
  });
  const { database } = await client.databases.createIfNotExists({ id: 'TasksDB' });
  ({ container: tasks } = await database.containers.createIfNotExists({ id: 'Tasks', partitionKey: '/id' }));
  const connectionString = blob.endpoints.connectionString as string;
  storage = BlobServiceClient.fromConnectionString(connectionString);
  const proxied = `http://127.0.0.1:${await listen(proxy, 0)}/`;
  const settings = {
    AzureWebJobsSecretStorageType: 'files',
    StorageConnection: connectionString.replace(/BlobEndpoint=http:\/\/[^/]+\//, `BlobEndpoint=${proxied}`),
    DocumentDbConnection: `AccountEndpoint=${endpoint};AccountKey=${secrets.cosmosKey};`,
    NotesContainer: 'settings',
  };
  host = await startComponent(
    'functions',
    { port: 0, appDir: appPath('app-inputs'), logFile, settings },
    data.dir,
  );
});

afterAll(async () => {
  await host?.stop();
  await close(proxy);
  client?.dispose();
  await Promise.all([cosmos?.stop(), blob?.stop()]);
  data.remove();
});

const put = async (container: string, name: string, content: string) => {
  const containerClient = storage.getContainerClient(container);
  await containerClient.createIfNotExists();
  await containerClient.getBlockBlobClient(name).upload(content, Buffer.byteLength(content));
};

describe('blob input (input.storageBlob)', () => {
  it('reads the blob its path names, with route values, as a Buffer', async () => {
    await put('notes', 'first.txt', 'the first note');
    expect(await get('notes/first')).toEqual({
      status: 200,
      body: { kind: 'buffer', text: 'the first note' },
    });
  });

  it('resolves %AppSetting% and query values in the path; dataType string gives text (JSON parsed by the library)', async () => {
    await put('settings', 'colour.json', '{"colour":"teal"}');
    expect(await get('readSetting?name=colour')).toEqual({
      status: 200,
      body: { kind: 'object', value: { colour: 'teal' } },
    });
  });

  it('reads one version of a blob rewritten while it is read, whole', async () => {
    await put('notes', 'changing.txt', 'v0');
    expect(await get('notes/changing')).toEqual({ status: 200, body: { kind: 'buffer', text: 'v0' } });
    expect(rewrites).toBe(1); // one request
  });

  it('gives undefined for a missing blob or container, as the host sends a null value', async () => {
    expect(await get('notes/nobody')).toEqual({ status: 200, body: { kind: 'undefined', text: null } });
    expect(await get('readSetting?name=absent')).toEqual({
      status: 200,
      body: { kind: 'undefined', value: null },
    });
  });

  it('fails the invocation (500, reason in the log) when a path value is missing', async () => {
    expect((await get('readSetting')).status).toBe(500);
    await waitFor('the reason in the log', () =>
      readLog(logFile).find((e) => e.message.includes("No value for named parameter 'query.name'.")),
    );
  });
});

describe('Cosmos DB input (input.cosmosDB)', () => {
  it('reads one document by id and partition key', async () => {
    await tasks.items.create({ id: 'task-1', Title: 'Read me' });
    const { status, body } = await get('readTask?id=task-1');
    expect(status).toBe(200);
    expect(body.kind).toBe('object');
    expect(body.task).toMatchObject({ id: 'task-1', Title: 'Read me' });
  });

  it('gives undefined for a missing document, as the host sends a null value', async () => {
    expect(await get('readTask?id=nobody')).toEqual({ status: 200, body: { kind: 'undefined', task: null } });
  });

  it('finds no document by id alone in a partitioned container, as the extension reads with PartitionKey.None', async () => {
    await tasks.items.create({ id: 'task-2', Title: 'Needs its key' });
    expect(await get('readTaskWithoutKey?id=task-2')).toEqual({
      status: 200,
      body: { kind: 'undefined', task: null },
    });
  });

  it('runs sqlQuery with binding values as SQL parameters (a value cannot change the query)', async () => {
    await tasks.items.create({ id: 'q-2', Title: 'Same' });
    await tasks.items.create({ id: 'q-1', Title: 'Same' });
    await tasks.items.create({ id: 'q-3', Title: 'Other' });
    expect(await get('tasks/by-title/Same')).toEqual({
      status: 200,
      body: [
        { id: 'q-1', Title: 'Same' },
        { id: 'q-2', Title: 'Same' },
      ],
    });
    const injection = encodeURIComponent('x" OR 1=1 OR c.Title = "');
    expect(await get(`tasks/by-title/${injection}`)).toEqual({ status: 200, body: [] });
  });
});

describe('Cosmos DB output (output.cosmosDB)', () => {
  const post = async (path: string, body: unknown) =>
    (await fetch(`${host.endpoints.baseUrl}/api/${path}`, { method: 'POST', body: JSON.stringify(body) }))
      .status;
  const title = async (id: string) => (await tasks.item(id, id).read()).resource?.Title;

  it('upserts each document of an array: an existing id is replaced, not refused', async () => {
    expect(
      await post('saveTasks', [
        { id: 'o-1', Title: 'One' },
        { id: 'o-2', Title: 'Two' },
      ]),
    ).toBe(201);
    expect([await title('o-1'), await title('o-2')]).toEqual(['One', 'Two']);
    expect(await post('saveTasks', { id: 'o-1', Title: 'Replaced' })).toBe(201);
    expect(await title('o-1')).toBe('Replaced');
  });

  it('generates no id, as the extension 4.x: a document without one fails the run and is not written', async () => {
    expect(await post('saveTasks', { Title: 'No id' })).toBe(500);
    const { resources } = await tasks.items
      .query({ query: 'SELECT * FROM c WHERE c.Title = @t', parameters: [{ name: '@t', value: 'No id' }] })
      .fetchAll();
    expect(resources).toEqual([]);
  });

  it("creates a missing container only with createIfNotExists, else fails in the extension's words", async () => {
    expect(await post('saveToNewContainer', { id: 'n-1' })).toBe(201);
    const created = client.database('NewDB').container('saveToNewContainer');
    expect((await created.item('n-1', 'n-1').read()).resource?.id).toBe('n-1');
    expect((await created.read()).resource?.partitionKey?.paths).toEqual(['/id']);
    expect(await post('saveToMissingContainer', { id: 'm-1' })).toBe(500);
    await waitFor('the reason in the log', () =>
      readLog(logFile).some((e) =>
        e.message.includes(
          "The container 'saveToMissingContainer' (in database 'NewDB') does not exist. To automatically create the container, set 'CreateIfNotExists' to 'true'.",
        ),
      ),
    );
  });
});

describe('other input types', () => {
  it('warn at start and fail the invocation with a clear message instead of passing undefined', async () => {
    const warnings = readLog(logFile).filter((e) => e.message.includes('bindings not served by this host'));
    expect(warnings.map((e) => e.message)).toEqual([
      expect.stringMatching(
        /^Function 'Functions\.readTable': bindings not served by this host: \S+ \(table, in\)$/,
      ),
    ]);
    expect((await get('readTable')).status).toBe(500);
    await waitFor('the reason in the log', () =>
      readLog(logFile).find((e) =>
        /input binding type 'table' \(\S+\) is not supported by this host/.test(e.message),
      ),
    );
  });
});
