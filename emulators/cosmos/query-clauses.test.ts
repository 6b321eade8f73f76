import type { Container, FeedOptions, SqlQuerySpec } from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CosmosFixture, queryAll, queryPages, startCosmos } from './testing.ts';

let cosmos: CosmosFixture;
let container: Container;

/** Ten tasks over three owners and three statuses; one has no status. */
const TASKS = Array.from({ length: 10 }, (_, n) => ({
  id: `t${n}`,
  owner: ['ann', 'bob', 'cy'][n % 3] as string,
  n,
  ...(n === 9 ? {} : { status: ['open', 'done', 'late'][n % 3 === 0 ? 0 : n % 2 ? 1 : 2] }),
}));

beforeAll(async () => {
  cosmos = await startCosmos({ inMemory: true });
  const { database } = await cosmos.client().databases.createIfNotExists({ id: 'ClausesDB' });
  ({ container } = await database.containers.createIfNotExists({
    id: 'Tasks',
    partitionKey: { paths: ['/owner'] },
  }));
  for (const task of TASKS) await container.items.create(task);
});
afterAll(() => cosmos.close());

const all = (query: string | SqlQuerySpec, options?: FeedOptions) => queryAll(container, query, options);
const pages = (query: string, options: FeedOptions) => queryPages(container, query, options);

const statuses = TASKS.map((t) => t.status);
const distinctStatuses = [...new Set(statuses.filter((s) => s !== undefined))];

describe('DISTINCT', () => {
  it('drops repeated results, objects and values alike', async () => {
    const objects = await all('SELECT DISTINCT c.status FROM c');
    // The task without a status projects to {}, a result of its own, as in Cosmos DB.
    expect(objects).toHaveLength(distinctStatuses.length + 1);
    expect(objects).toEqual(expect.arrayContaining([{}, ...distinctStatuses.map((status) => ({ status }))]));
    const values = await all('SELECT DISTINCT VALUE c.status FROM c');
    expect([...values].sort()).toEqual([...distinctStatuses].sort());
  });

  it('keeps ORDER BY, and pages with maxItemCount and continuation tokens without repeating', async () => {
    const query = 'SELECT DISTINCT VALUE c.status FROM c ORDER BY c.status DESC';
    expect(await all(query)).toEqual([...distinctStatuses].sort().reverse());
    expect(await pages(query, { maxItemCount: 2 })).toEqual([['open', 'late'], ['done']]);
    const first = await container.items.query(query, { maxItemCount: 2 }).fetchNext();
    expect(first.continuationToken).toBeTruthy();
    const rest = await container.items
      .query(query, { maxItemCount: 2, continuationToken: first.continuationToken })
      .fetchNext();
    expect(rest.resources).toEqual(['done']);
    expect(rest.continuationToken).toBeUndefined();
  });

  it('applies TOP after DISTINCT, not before', async () => {
    expect(await all('SELECT DISTINCT TOP 2 VALUE c.owner FROM c ORDER BY c.owner')).toEqual(['ann', 'bob']);
  });

  it('takes objects with the same properties in another order as the same result', async () => {
    const values = await all(
      'SELECT DISTINCT VALUE (c.n % 2 = 0 ? {"a": 1, "b": 2} : {"b": 2, "a": 1}) FROM c',
    );
    expect(values).toEqual([{ a: 1, b: 2 }]);
  });
});

describe('OFFSET … LIMIT', () => {
  it('skips and takes after ORDER BY, with literals or parameters', async () => {
    expect(await all('SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 2 LIMIT 3')).toEqual([2, 3, 4]);
    const query = {
      query: 'SELECT c.id FROM c ORDER BY c.n DESC OFFSET @skip LIMIT @take',
      parameters: [
        { name: '@skip', value: 8 },
        { name: '@take', value: 5 },
      ],
    };
    expect(await all(query)).toEqual([{ id: 't1' }, { id: 't0' }]);
    expect(await all('SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 20 LIMIT 3')).toEqual([]);
    expect(await all('SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 0 LIMIT 0')).toEqual([]);
  });

  it('pages the window it selects with maxItemCount, fetchNext and continuation tokens', async () => {
    const query = 'SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 1 LIMIT 5';
    expect(await pages(query, { maxItemCount: 2 })).toEqual([[1, 2], [3, 4], [5]]);
    const first = await container.items.query(query, { maxItemCount: 4 }).fetchNext();
    expect(first.resources).toEqual([1, 2, 3, 4]);
    const rest = await container.items
      .query(query, { maxItemCount: 4, continuationToken: first.continuationToken })
      .fetchNext();
    expect(rest.resources).toEqual([5]);
  });

  it('combines with DISTINCT: the window is over the distinct results', async () => {
    expect(await all('SELECT DISTINCT VALUE c.owner FROM c ORDER BY c.owner OFFSET 1 LIMIT 1')).toEqual([
      'bob',
    ]);
  });

  it('scopes to the partitionKey option like any query', async () => {
    expect(
      await all('SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 1 LIMIT 2', { partitionKey: 'bob' }),
    ).toEqual([4, 7]);
  });
});

describe('GROUP BY', () => {
  const byOwner = (rows: { owner?: string }[]) =>
    [...rows].sort((a, b) => String(a.owner).localeCompare(String(b.owner)));

  it('groups and aggregates COUNT, SUM, AVG, MIN and MAX per group', async () => {
    const rows = await all(
      'SELECT c.owner, COUNT(1) AS count, SUM(c.n) AS total, AVG(c.n) AS mean, MIN(c.n) AS low, MAX(c.n) AS high FROM c GROUP BY c.owner',
    );
    const expected = ['ann', 'bob', 'cy'].map((owner) => {
      const ns = TASKS.filter((t) => t.owner === owner).map((t) => t.n);
      const total = ns.reduce((a, b) => a + b, 0);
      return {
        owner,
        count: ns.length,
        total,
        mean: total / ns.length,
        low: Math.min(...ns),
        high: Math.max(...ns),
      };
    });
    expect(byOwner(rows)).toEqual(expected);
  });

  it('groups by several expressions, with WHERE, and leaves out a group key that is undefined', async () => {
    const rows = await all(
      'SELECT c.status, c.owner, COUNT(1) AS count FROM c WHERE c.n >= 3 GROUP BY c.status, c.owner',
    );
    const expected = new Map<string, { status?: string; owner: string; count: number }>();
    for (const t of TASKS.filter((task) => task.n >= 3)) {
      const key = `${t.status}/${t.owner}`;
      const row = expected.get(key) ?? {
        ...(t.status === undefined ? {} : { status: t.status }),
        owner: t.owner,
        count: 0,
      };
      row.count += 1;
      expected.set(key, row);
    }
    expect(rows).toHaveLength(expected.size);
    expect(rows).toEqual(expect.arrayContaining([...expected.values()]));
    expect(rows).toContainEqual({ owner: 'ann', count: 1 });
  });

  it('takes a property written another way as the one grouped: c["owner"] is c.owner', async () => {
    const rows = await all('SELECT c["owner"], c . owner AS again FROM c WHERE c.n < 2 GROUP BY c.owner');
    expect(rows).toEqual(
      expect.arrayContaining([
        { owner: 'ann', again: 'ann' },
        { owner: 'bob', again: 'bob' },
      ]),
    );
    expect(rows).toHaveLength(2);
  });

  it('answers SELECT VALUE of a group expression or of an aggregate', async () => {
    expect([...(await all('SELECT VALUE c.owner FROM c GROUP BY c.owner'))].sort()).toEqual([
      'ann',
      'bob',
      'cy',
    ]);
    expect([...(await all('SELECT VALUE COUNT(1) FROM c GROUP BY c.owner'))].sort()).toEqual([3, 3, 4]);
  });

  it('accepts expressions over the grouped properties and names unaliased ones $1, $2', async () => {
    const rows = await all(
      'SELECT UPPER(c.owner), COUNT(1), CONCAT(c.owner, "@x.y") AS mail FROM c WHERE c.owner = "cy" GROUP BY c.owner',
    );
    expect(rows).toEqual([{ $1: 'CY', $2: 3, mail: 'cy@x.y' }]);
  });

  it('evaluates aggregates inside larger expressions and objects, once per group', async () => {
    const rows = await all(
      'SELECT c.owner, ROUND(AVG(c.n) * 10) / 10 AS mean, {"n": COUNT(1), "top": MAX(c.n)} AS stats FROM c WHERE c.owner = "bob" GROUP BY c.owner',
    );
    expect(rows).toEqual([{ owner: 'bob', mean: 4, stats: { n: 3, top: 7 } }]);
    const values = await all('SELECT VALUE {"owner": c.owner, "count": COUNT(1)} FROM c GROUP BY c.owner');
    expect(values).toHaveLength(3);
    expect(values).toEqual(expect.arrayContaining([{ owner: 'cy', count: 3 }]));
  });

  it('groups over a JOIN', async () => {
    await container.items.create({ id: 'tagged', owner: 'dee', n: 20, tags: ['x', 'y', 'x'] });
    try {
      const rows = await all('SELECT t AS tag, COUNT(1) AS uses FROM c JOIN t IN c.tags GROUP BY t');
      expect(rows).toEqual(
        expect.arrayContaining([
          { tag: 'x', uses: 2 },
          { tag: 'y', uses: 1 },
        ]),
      );
      expect(rows).toHaveLength(2);
    } finally {
      await container.item('tagged', 'dee').delete();
    }
  });

  it('pages the groups with maxItemCount and fetchNext, each group once', async () => {
    const seen = await pages('SELECT VALUE c.owner FROM c GROUP BY c.owner', { maxItemCount: 2 });
    expect(seen.map((page) => page.length)).toEqual([2, 1]);
    expect(seen.flat().sort()).toEqual(['ann', 'bob', 'cy']);
  });

  it('runs in one partition with the partitionKey option', async () => {
    const rows = await all('SELECT c.status, COUNT(1) AS count FROM c GROUP BY c.status', {
      partitionKey: 'cy',
    });
    const counts: Record<string, number> = {};
    for (const t of TASKS.filter((task) => task.owner === 'cy'))
      counts[String(t.status)] = (counts[String(t.status)] ?? 0) + 1;
    expect(Object.fromEntries(rows.map((r) => [r.status, r.count]))).toEqual(counts);
    expect(rows).toHaveLength(2);
  });
});

describe('a client that forces the query plan', () => {
  it('gets the same answers: the gateway answers these clauses whole on its one range', async () => {
    for (const query of [
      'SELECT DISTINCT VALUE c.status FROM c',
      'SELECT VALUE c.n FROM c OFFSET 2 LIMIT 3',
      'SELECT c.owner, COUNT(1) AS count FROM c GROUP BY c.owner',
      'SELECT VALUE COUNT(1) FROM c GROUP BY c.owner',
    ])
      expect(await all(query, { forceQueryPlan: true }), query).toEqual(await all(query));
  });
});

describe('queries Cosmos DB refuses', () => {
  const refusal = async (query: string) => {
    const error = await all(query).catch((e) => e);
    expect(error.code, query).toBe(400);
    expect(error.body.code).toBe('BadRequest');
    return error.body.message.split('\r\n')[0] as string;
  };

  it('refuses a property in the select list that is neither grouped nor aggregated, with SC2102', async () => {
    const query = 'SELECT c.owner, c.status, COUNT(1) AS count FROM c GROUP BY c.owner';
    expect(await refusal(query)).toBe(
      `Message: {"errors":[{"severity":"Error","location":{"start":16,"end":24},"code":"SC2102","message":"Property reference 'c.status' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause."}]}`,
    );
  });

  it.each([
    ['SELECT c.owner FROM c GROUP BY', 'BY'],
    ['SELECT c.owner FROM c GROUP c.owner', 'c'],
    ['SELECT VALUE c.n FROM c OFFSET 1', '1'],
    ['SELECT VALUE c.n FROM c LIMIT 1', 'LIMIT'],
    ['SELECT VALUE c.n FROM c OFFSET -1 LIMIT 1', '-'],
  ])('reports a malformed clause as a syntax error, SC1001, at the token: %s', async (query, near) => {
    const start = query.lastIndexOf(near);
    expect(await refusal(query)).toBe(
      `Message: {"errors":[{"severity":"Error","location":{"start":${start},"end":${start + near.length}},"code":"SC1001","message":"Syntax error, incorrect syntax near '${near}'."}]}`,
    );
  });

  it('refuses an OFFSET past 4294967295 with SC2062, as Cosmos DB does', async () => {
    expect(await refusal('SELECT c.n FROM c OFFSET 4294967296 LIMIT 10')).toBe(
      `Message: {"errors":[{"severity":"Error","location":{"start":25,"end":35},"code":"SC2062","message":"The OFFSET count value exceeds the maximum allowed value."}]}`,
    );
  });

  it('says what this emulator cannot run rather than answering wrongly', async () => {
    for (const [query, what] of [
      ['SELECT VALUE 1 FROM c GROUP BY COUNT(1)', 'An aggregate in GROUP BY'],
      ['SELECT VALUE MAX(COUNT(1)) FROM c GROUP BY c.owner', 'An aggregate of an aggregate'],
      ['SELECT c.owner FROM c GROUP BY c.owner ORDER BY c.owner', 'ORDER BY with GROUP BY'],
      ['SELECT VALUE ARRAY(SELECT DISTINCT VALUE t FROM t IN c.tags) FROM c', 'DISTINCT inside a subquery'],
      [
        'SELECT VALUE ARRAY(SELECT VALUE t FROM t IN c.tags OFFSET 0 LIMIT 1) FROM c',
        'OFFSET inside a subquery',
      ],
    ] as const)
      expect(await refusal(query), query).toMatch(
        new RegExp(
          `^Message: \\{"errors":\\[\\{"severity":"Error","location":\\{"start":\\d+,"end":\\d+\\},"message":"${what.replace(/[()]/g, '\\$&')} is not supported by this emulator."\\}\\]\\}$`,
        ),
      );
  });
});
