import { type Container, type OperationInput, PatchOperationType } from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CosmosFixture, startCosmos } from './testing.ts';

let cosmos: CosmosFixture;
let container: Container;

beforeAll(async () => {
  cosmos = await startCosmos({ inMemory: true });
  const { database } = await cosmos.client().databases.createIfNotExists({ id: 'TestDB' });
  ({ container } = await database.containers.createIfNotExists({
    id: 'Tasks',
    partitionKey: { paths: ['/owner'] },
  }));
});
afterAll(() => cosmos.close());

describe('databases and containers', () => {
  it('createIfNotExists finds what exists and reports the partition key definition', async () => {
    const client = cosmos.client();
    const again = await client.databases.createIfNotExists({ id: 'TestDB' });
    expect(again.statusCode).toBe(200);
    const { resource } = await again.database.containers.createIfNotExists({
      id: 'Tasks',
      partitionKey: '/owner',
    });
    expect(resource?.partitionKey?.paths).toEqual(['/owner']);
    // What this file created, beside what the topology declares (TasksDB, created at start).
    const { resources } = await client.databases.readAll().fetchAll();
    expect(resources.map((d) => d.id).sort()).toEqual(['TasksDB', 'TestDB']);
  });

  it('keeps clients on the address they were given when endpoint discovery is on', async () => {
    // The account lists one location: the address the client came by, which the SDK then caches.
    for (const endpoint of [cosmos.endpoint, cosmos.endpoint.replace('127.0.0.1', 'localhost')]) {
      const client = cosmos.client({ endpoint, connectionPolicy: { enableEndpointDiscovery: true } });
      const account = (await client.getDatabaseAccount()).resource;
      expect(account?.consistencyPolicy).toBe('Session');
      expect(account?.writableLocations).toEqual([
        { name: 'South Central US', databaseAccountEndpoint: endpoint },
      ]);
      expect(account?.readableLocations).toEqual(account?.writableLocations);
      expect(await client.getWriteEndpoint()).toBe(endpoint);
      expect(await client.getReadEndpoint()).toBe(endpoint);
      expect((await client.database('TestDB').read()).statusCode).toBe(200);
      // As against Azure, the SDK keeps the locations it read: no account lookup before each request.
      const again = await client.database('TestDB').read();
      expect(again.diagnostics.clientSideRequestStatistics.metadataDiagnostics.metadataLookups).toEqual([]);
    }
  });

  it('creates, lists and deletes containers and databases', async () => {
    const client = cosmos.client();
    const { database, statusCode } = await client.databases.create({ id: 'Scratch' });
    expect(statusCode).toBe(201);
    await database.containers.create({ id: 'one', partitionKey: '/id' });
    const { resources } = await database.containers.readAll().fetchAll();
    expect(resources.map((c) => c.id)).toEqual(['one']);
    await database.container('one').delete();
    await database.delete();
    const gone = await client
      .database('Scratch')
      .read()
      .catch((error) => error);
    expect(gone.code).toBe(404);
  });
});

describe('documents', () => {
  it('creates, reads, replaces, upserts and deletes with system properties', async () => {
    const seconds = () => Math.floor(cosmos.context.clock.now() / 1000);
    const before = seconds();
    const created = await container.items.create({ id: 't1', owner: 'ann', title: 'first' });
    const after = seconds();
    expect(created.statusCode).toBe(201);
    const item = created.resource as unknown as Record<string, unknown>;
    expect(item).toMatchObject({ id: 't1', owner: 'ann', title: 'first' });
    expect(item._rid).toMatch(/^[A-Za-z0-9+=-]+$/);
    expect(item._self).toBe(`${(await container.read()).resource?._self}docs/${item._rid}/`);
    expect(item._etag).toMatch(/^"[0-9a-f-]{36}"$/);
    // The write's second on the stack clock (it may fall either side of a second's edge).
    expect(item._ts).toBeGreaterThanOrEqual(before);
    expect(item._ts).toBeLessThanOrEqual(after);

    const read = await container.item('t1', 'ann').read();
    expect(read.statusCode).toBe(200);
    expect(read.resource.title).toBe('first');

    const replaced = await container.item('t1', 'ann').replace({ id: 't1', owner: 'ann', title: 'second' });
    expect(replaced.resource?.title).toBe('second');
    expect(replaced.resource?._rid).toBe(item._rid);
    expect(replaced.etag).not.toBe(item._etag);

    const upserted = await container.items.upsert({ id: 't1', owner: 'ann', title: 'third' });
    expect(upserted.statusCode).toBe(200);
    const fresh = await container.items.upsert({ id: 't2', owner: 'ann', title: 'new' });
    expect(fresh.statusCode).toBe(201);

    const deleted = await container.item('t2', 'ann').delete();
    expect(deleted.statusCode).toBe(204);
    expect((await container.item('t2', 'ann').read()).statusCode).toBe(404);
  });

  it('answers a missing id with 404 (no throw on read) and the Cosmos body', async () => {
    const missing = await container.item('nope', 'ann').read();
    expect(missing.statusCode).toBe(404);
    expect(missing.resource).toBeUndefined();
    const error = await container
      .item('nope', 'ann')
      .delete()
      .catch((e) => e);
    expect(error.code).toBe(404);
    expect(error.body.code).toBe('NotFound');
    expect(error.body.message).toMatch(
      /^Entity with the specified id does not exist in the system\. More info: https:\/\/aka\.ms\/cosmosdb-tsg-not-found\r\nActivityId: [0-9a-f-]{36}, /,
    );
  });

  it('takes ids the SDK lets through as Azure does: "?" round-trips, "/" is stored (bulk sends it unchecked)', async () => {
    const id = 'Disallowed?Chars';
    expect((await container.items.create({ id, owner: 'ann' })).statusCode).toBe(201);
    const item = container.item(id, 'ann');
    expect((await item.read()).resource?.id).toBe(id);
    expect((await item.replace({ id, owner: 'ann', v: 2 })).statusCode).toBe(200);
    expect((await item.patch([{ op: 'set', path: '/v', value: 3 }])).resource?.v).toBe(3);
    expect((await item.delete()).statusCode).toBe(204);
    expect((await item.read()).statusCode).toBe(404);
    // Azure stores it, though no point operation can address it afterwards (only queries find it).
    const [slash] = await container.items.bulk([
      { operationType: 'Create', resourceBody: { id: 'ab/cd', owner: 'ann' } },
    ]);
    expect(slash?.statusCode).toBe(201);
  });

  it('refuses a body whose partition key is not the one addressed with 400, substatus 1001, Azure’s text', async () => {
    await container.items.create({ id: 'pk', owner: 'ann' });
    const moved = await container
      .item('pk', 'ann')
      .replace({ id: 'pk', owner: 'bob' })
      .catch((e) => e);
    expect(moved.code).toBe(400);
    expect(moved.substatus).toBe(1001);
    expect(moved.body.message.split('\r\n')[0]).toBe(
      'Message: {"Errors":["PartitionKey extracted from document doesn\'t match the one specified in the header. Learn more: https:\\/\\/aka.ms\\/CosmosDB\\/sql\\/errors\\/wrong-pk-value"]}',
    );
    expect((await container.item('pk', 'ann').read()).resource?.owner).toBe('ann');
  });

  it('refuses a duplicate id in the same partition with 409, allows it in another', async () => {
    await container.items.create({ id: 'dup', owner: 'ann' });
    const error = await container.items.create({ id: 'dup', owner: 'ann' }).catch((e) => e);
    expect(error.code).toBe(409);
    expect(error.body.code).toBe('Conflict');
    expect(error.body.message).toMatch(/^Entity with the specified id already exists in the system\./);
    expect((await container.items.create({ id: 'dup', owner: 'bob' })).statusCode).toBe(201);
  });

  it('honours If-Match on replace with 412', async () => {
    const { resource } = await container.items.create({ id: 'etag', owner: 'ann', v: 1 });
    await container.item('etag', 'ann').replace({ id: 'etag', owner: 'ann', v: 2 });
    const stale = await container
      .item('etag', 'ann')
      .replace(
        { id: 'etag', owner: 'ann', v: 3 },
        { accessCondition: { type: 'IfMatch', condition: resource?._etag as string } },
      )
      .catch((e) => e);
    expect(stale.code).toBe(412);
    expect(stale.body.code).toBe('PreconditionFailed');
  });

  it('patches: set, add to array, incr, remove; a false condition gives 412', async () => {
    await container.items.create({ id: 'p', owner: 'ann', n: 1, tags: ['a'], gone: true });
    const { resource } = await container.item('p', 'ann').patch([
      { op: PatchOperationType.set, path: '/title', value: 'patched' },
      { op: PatchOperationType.add, path: '/tags/-', value: 'b' },
      { op: PatchOperationType.incr, path: '/n', value: 5 },
      { op: PatchOperationType.remove, path: '/gone' },
    ]);
    expect(resource).toMatchObject({ title: 'patched', tags: ['a', 'b'], n: 6 });
    expect(resource).not.toHaveProperty('gone');
    const refused = await container
      .item('p', 'ann')
      .patch({ condition: 'FROM c WHERE c.n = 0', operations: [{ op: 'set', path: '/n', value: 0 }] })
      .catch((e) => e);
    expect(refused.code).toBe(412);
    const bad = await container
      .item('p', 'ann')
      .patch([{ op: 'replace', path: '/missing/x', value: 1 }])
      .catch((e) => e);
    expect(bad.code).toBe(400);
  });

  it('runs a transactional batch, and rolls it all back when one operation fails', async () => {
    const ok: OperationInput[] = [
      { operationType: 'Create', resourceBody: { id: 'b1', owner: 'bat' } },
      { operationType: 'Upsert', resourceBody: { id: 'b2', owner: 'bat' } },
      { operationType: 'Read', id: 'b1' },
      {
        operationType: 'Patch',
        id: 'b2',
        resourceBody: { operations: [{ op: 'add', path: '/x', value: 1 }] },
      },
    ];
    const done = await container.items.batch(ok, 'bat');
    expect(done.result?.map((r) => r.statusCode)).toEqual([201, 201, 200, 200]);
    expect(done.result?.[3]?.resourceBody).toMatchObject({ id: 'b2', x: 1 });

    const failing: OperationInput[] = [
      { operationType: 'Create', resourceBody: { id: 'b3', owner: 'bat' } },
      { operationType: 'Create', resourceBody: { id: 'b1', owner: 'bat' } },
    ];
    const failed = await container.items.batch(failing, 'bat');
    expect(failed.code).toBe(207);
    expect(failed.result?.map((r) => r.statusCode)).toEqual([424, 409]);
    expect((await container.item('b3', 'bat').read()).statusCode).toBe(404);
  });

  it('runs bulk operations one by one: a failure undoes nothing, and stops the rest only when asked', async () => {
    await container.items.create({ id: 'k0', owner: 'bulk' });
    const creates = (...ids: string[]): OperationInput[] =>
      ids.map((id) => ({ operationType: 'Create', resourceBody: { id, owner: 'bulk' } }));
    const all = await container.items.bulk(creates('k1', 'k0', 'k2'));
    expect(all.map((r) => r.statusCode)).toEqual([201, 409, 201]);
    const stopped = await container.items.bulk(creates('k3', 'k0', 'k4'), { continueOnError: false });
    expect(stopped.map((r) => r.statusCode)).toEqual([201, 409, 424]);
    const { resources } = await container.items
      .query('SELECT VALUE c.id FROM c WHERE c.owner = "bulk"')
      .fetchAll();
    expect(resources.sort()).toEqual(['k0', 'k1', 'k2', 'k3']);
  });
});

describe('queries', () => {
  beforeAll(async () => {
    for (let i = 0; i < 25; i += 1)
      await container.items.create({ id: `q${i}`, owner: i % 2 ? 'odd' : 'even', n: i });
  });

  it('runs parameterised SQL with ORDER BY and aggregates', async () => {
    const { resources } = await container.items
      .query({
        query: 'SELECT c.id, c.n FROM c WHERE c.n >= @min AND STARTSWITH(c.id, "q") ORDER BY c.n DESC',
        parameters: [{ name: '@min', value: 20 }],
      })
      .fetchAll();
    expect(resources.map((r) => r.n)).toEqual([24, 23, 22, 21, 20]);
    const { resources: count } = await container.items
      .query('SELECT VALUE COUNT(1) FROM c WHERE c.owner = "odd"')
      .fetchAll();
    expect(count).toEqual([12]);
  });

  it('scopes a query to the partitionKey option', async () => {
    const { resources } = await container.items
      .query('SELECT * FROM c WHERE STARTSWITH(c.id, "q")', { partitionKey: 'odd' })
      .fetchAll();
    expect(resources).toHaveLength(12);
    expect(resources.every((r) => r.owner === 'odd')).toBe(true);
  });

  it('pages with maxItemCount and continuation tokens', async () => {
    const iterator = container.items.query('SELECT * FROM c WHERE STARTSWITH(c.id, "q")', {
      maxItemCount: 10,
    });
    const pages: number[] = [];
    const seen = new Set<string>();
    while (iterator.hasMoreResults()) {
      const { resources, continuationToken } = await iterator.fetchNext();
      if (resources.length) pages.push(resources.length);
      for (const r of resources) seen.add(r.id);
      if (resources.length === 10) expect(continuationToken).toBeTruthy();
    }
    expect(pages).toEqual([10, 10, 5]);
    expect(seen.size).toBe(25);
    const { resources: all } = await container.items.readAll({ partitionKey: 'even' }).fetchAll();
    expect(all.filter((r) => r.id?.startsWith('q'))).toHaveLength(13);
  });

  it('answers the SDK query plan request and reports syntax errors as Cosmos does', async () => {
    const error = await container.items
      .query('SELECT * FROM c WHERE')
      .fetchAll()
      .catch((e) => e);
    expect(error.code).toBe(400);
    expect(error.body.code).toBe('BadRequest');
    expect(error.body.message).toMatch(
      /^Message: \{"errors":\[\{"severity":"Error","location":\{"start":\d+,"end":\d+\},"code":"SC1001","message":"Syntax error, incorrect syntax near/,
    );
  });

  it('serves an ORDER BY over several properties only from a composite index, as Cosmos DB does', async () => {
    const { database } = await cosmos.client().databases.createIfNotExists({ id: 'TestDB' });
    const { container: ordered } = await database.containers.createIfNotExists({
      id: 'Ordered',
      partitionKey: { paths: ['/pk'] },
      indexingPolicy: {
        compositeIndexes: [
          [
            { path: '/pk', order: 'ascending' },
            { path: '/n', order: 'descending' },
          ],
        ],
      },
    });
    for (const [id, pk, n] of [
      ['a', 'x', 1],
      ['b', 'x', 2],
      ['c', 'y', 0],
    ] as const)
      await ordered.items.create({ id, pk, n });
    const ids = async (query: string, target = ordered) =>
      (await target.items.query(query).fetchAll()).resources.map((r) => r.id);
    expect(await ids('SELECT * FROM c ORDER BY c.pk ASC, c.n DESC')).toEqual(['b', 'a', 'c']);
    // All directions reversed: the same index, read backwards.
    expect(await ids('SELECT * FROM c ORDER BY c.pk DESC, c.n ASC')).toEqual(['c', 'a', 'b']);
    const refused = `Message: {"Errors":["The order by query does not have a corresponding composite index that it can be served from."]}`;
    for (const [query, target] of [
      ['SELECT * FROM c ORDER BY c.pk ASC, c.n ASC', ordered],
      ['SELECT * FROM c ORDER BY c.n DESC, c.pk ASC', ordered],
      ['SELECT * FROM c ORDER BY c.owner, c.title', container],
    ] as const) {
      const error = await ids(query, target).catch((e) => e);
      expect(error.code, query).toBe(400);
      expect(error.body.message.split('\r\n')[0], query).toBe(refused);
    }
  });

  it.each([
    [
      'SELECT VALUE c.id FROM c WHERE FOO(c.n)',
      '{"severity":"Error","location":{"start":31,"end":34},"code":"SC2005","message":"\'FOO\' is not a recognized built-in function name."}',
    ],
    [
      'SELECT IIF(c.n > 1, "a", "b") AS x FROM c',
      '{"severity":"Error","location":{"start":7,"end":10},"message":"The built-in function IIF is not supported by this emulator."}',
    ],
    [
      'SELECT VALUE c.id FROM c WHERE STARTSWITH(c.id, "Q", true)',
      '{"severity":"Error","location":{"start":31,"end":41},"message":"The ignore-case argument of STARTSWITH is not supported by this emulator."}',
    ],
    [
      'SELECT VALUE c.id FROM c WHERE udf.check(c.n)',
      '{"severity":"Error","location":{"start":31,"end":40},"message":"User-defined functions (udf.check) are not supported by this emulator."}',
    ],
  ])('refuses a function call it cannot run before running it, never with its engine’s own error: %s', async (query, detail) => {
    const error = await container.items
      .query(query)
      .fetchAll()
      .catch((e) => e);
    expect(error.code).toBe(400);
    expect(error.body.message.split('\r\n')[0]).toBe(`Message: {"errors":[${detail}]}`);
  });

  it.each([
    ['SELECT * FROM c WHERE a.id = "q1"', 22, 'a'],
    // An output name is no alias.
    ['SELECT c.id, "x" AS x FROM c WHERE c.owner = "nobody" AND x = 1', 58, 'x'],
    // Refused before the query runs: the engine failed only where it evaluated the name (no item has tags).
    [
      'SELECT VALUE t FROM c JOIN t IN c.tags WHERE EXISTS(SELECT VALUE u FROM u IN c.tags WHERE u = t2)',
      94,
      't2',
    ],
  ])('refuses a name that is no alias in scope with Cosmos’s SC2001: %s', async (query, start, name) => {
    const error = await container.items
      .query(query)
      .fetchAll()
      .catch((e) => e);
    expect(error.code).toBe(400);
    const detail = { severity: 'Error', location: { start, end: start + name.length }, code: 'SC2001' };
    expect(error.body.message.split('\r\n')[0]).toBe(
      `Message: {"errors":[${JSON.stringify({ ...detail, message: `Identifier '${name}' could not be resolved.` })}]}`,
    );
  });

  it('resolves the aliases a query declares: FROM, AS, JOIN, IN and subqueries', async () => {
    await container.items.create({ id: 'al', owner: 'alias', n: 1000, tags: ['al', 'x'] });
    for (const [query, expected] of [
      ['SELECT VALUE r.id FROM root r WHERE r.n = 1000', ['al']],
      ['SELECT c.id AS x, {a: c.n}.a AS b FROM c', [{ x: 'al', b: 1000 }]],
      ['SELECT VALUE t FROM c JOIN t IN c.tags', ['al', 'x']],
      ['SELECT VALUE ARRAY(SELECT VALUE u FROM u IN c.tags WHERE u = c.id) FROM c', [['al']]],
      ['SELECT VALUE v FROM v IN c.tags', ['al', 'x']],
    ] as const) {
      const { resources } = await container.items.query(query, { partitionKey: 'alias' }).fetchAll();
      expect(resources, query).toEqual(expected);
    }
  });
});
