import type { Container, FeedOptions } from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CosmosFixture, queryAll, queryPages, startCosmos } from './testing.ts';

let cosmos: CosmosFixture;
let container: Container;

/** Seven tasks over two owners; one has no n. */
const TASKS = Array.from({ length: 7 }, (_, i) => ({
  id: `t${i}`,
  owner: i % 2 ? 'ann' : 'bob',
  ...(i === 3 ? {} : { n: (i * 5) % 7 }),
}));

beforeAll(async () => {
  cosmos = await startCosmos({ inMemory: true });
  const { database } = await cosmos.client().databases.createIfNotExists({ id: 'PlanDB' });
  ({ container } = await database.containers.createIfNotExists({
    id: 'Tasks',
    partitionKey: { paths: ['/owner'] },
  }));
  for (const task of TASKS) await container.items.create(task);
});
afterAll(() => cosmos.close());

const FORCED: FeedOptions = { forceQueryPlan: true };
const all = (query: string, options?: FeedOptions) => queryAll(container, query, options);

/**
 * Each page fetchNext hands out, then the same pages again, each from a new iterator resumed from the
 * last page's token: the SDK gives tokens on the plan's path only with `enableQueryControl`.
 */
async function pages(query: string, options: FeedOptions) {
  const seen = await queryPages(container, query, options);
  const resumed: unknown[][] = [];
  let continuationToken: string | undefined;
  do {
    const page = await container.items
      .query(query, { ...options, enableQueryControl: true, continuationToken })
      .fetchNext();
    if (page.resources.length) resumed.push(page.resources);
    continuationToken = page.continuationToken;
    // Bounded: a token that never ends would be a bug, not a reason to hang.
  } while (continuationToken && resumed.length <= TASKS.length);
  return { seen, resumed };
}

const ns = TASKS.flatMap((t) => (t.n === undefined ? [] : [t.n]));
const ids = (order: (a: number, b: number) => number) =>
  TASKS.filter((t) => t.n !== undefined)
    .sort((a, b) => order(a.n as number, b.n as number))
    .map((t) => t.id);

describe('a client that forces the query plan (forceQueryPlan)', () => {
  it.each([
    ['SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.n) ORDER BY c.n', ids((a, b) => a - b)],
    ['SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.n) ORDER BY c.n DESC', ids((a, b) => b - a)],
    ['SELECT TOP 3 VALUE c.id FROM c WHERE IS_DEFINED(c.n) ORDER BY c.n', ids((a, b) => a - b).slice(0, 3)],
    ['SELECT TOP 2 c.id FROM c WHERE c.owner = "ann" ORDER BY c.id', [{ id: 't1' }, { id: 't3' }]],
    ['SELECT VALUE COUNT(1) FROM c', [TASKS.length]],
    ['SELECT VALUE COUNT(c.n) FROM c', [ns.length]],
    ['SELECT VALUE SUM(c.n) FROM c', [ns.reduce((a, b) => a + b, 0)]],
    ['SELECT VALUE MIN(c.n) FROM c', [Math.min(...ns)]],
    ['SELECT VALUE MAX(c.n) FROM c', [Math.max(...ns)]],
    ['SELECT VALUE AVG(c.n) FROM c', [ns.reduce((a, b) => a + b, 0) / ns.length]],
    ['SELECT VALUE COUNT(1) FROM c WHERE c.owner = "nobody"', [0]],
  ])('answers %s as without it, with fetchAll, fetchNext pages and continuation tokens', async (query, want) => {
    expect(await all(query)).toEqual(want);
    expect(await all(query, FORCED)).toEqual(want);
    const paged = await pages(query, { ...FORCED, maxItemCount: 2 });
    expect(paged.seen.flat()).toEqual(want);
    expect(paged.seen.every((page) => page.length <= 2)).toBe(true);
    expect(paged.resumed.flat()).toEqual(want);
  });
});
