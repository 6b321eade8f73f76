import { appendFileSync, cpSync } from 'node:fs';
import { join } from 'node:path';
import { ChangeFeedStartFrom, type Container } from '@azure/cosmos';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { type CosmosFixture, startCosmos } from './testing.ts';

let cosmos: CosmosFixture;
afterEach(() => cosmos?.close());

async function tasks(fixture: CosmosFixture): Promise<Container> {
  const { database } = await fixture.client().databases.createIfNotExists({ id: 'TestDB' });
  const { container } = await database.containers.createIfNotExists({ id: 'Tasks', partitionKey: '/owner' });
  return container;
}

/** Reads a change feed iterator until it reports nothing new (304); returns the ids seen and the last token. */
async function drain(iterator: ReturnType<Container['items']['getChangeFeedIterator']>) {
  const ids: string[] = [];
  for (;;) {
    const page = await iterator.readNext();
    if (page.statusCode === 304) return { ids, token: page.continuationToken };
    expect(page.statusCode).toBe(200);
    ids.push(...page.result.map((item: { id: string }) => item.id));
  }
}

describe('change feed', () => {
  it('gives each new or updated document once, in write order, then 304', async () => {
    cosmos = await startCosmos({ inMemory: true });
    const container = await tasks(cosmos);
    for (const id of ['a', 'b', 'c']) await container.items.create({ id, owner: 'ann' });
    await container.items.upsert({ id: 'a', owner: 'ann', v: 2 });
    await container.item('b', 'ann').delete();
    const iterator = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
      maxItemCount: 1,
    });
    // Latest-version mode: 'a' appears once (its update moved it after 'c'); the deleted 'b' is absent.
    const first = await drain(iterator);
    expect(first.ids).toEqual(['c', 'a']);
    await container.items.create({ id: 'd', owner: 'bob' });
    expect((await drain(iterator)).ids).toEqual(['d']);
    const page = await iterator.readNext();
    expect(page.statusCode).toBe(304);
  });

  it('Now() sees only later documents; Time() those written from then on', async () => {
    cosmos = await startCosmos({ inMemory: true });
    const container = await tasks(cosmos);
    await container.items.create({ id: 'old', owner: 'ann' });
    const now = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    expect((await now.readNext()).statusCode).toBe(304);
    cosmos.context.clock.advance(60_000);
    const later = cosmos.context.clock.date();
    await container.items.create({ id: 'new', owner: 'ann' });
    expect((await drain(now)).ids).toEqual(['new']);
    const since = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Time(later),
    });
    expect((await drain(since)).ids).toEqual(['new']);
  });

  it('scopes the feed to one partition key', async () => {
    cosmos = await startCosmos({ inMemory: true });
    const container = await tasks(cosmos);
    for (const [id, owner] of [
      ['1', 'ann'],
      ['2', 'bob'],
      ['3', 'ann'],
    ])
      await container.items.create({ id, owner });
    const ann = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning('ann'),
    });
    expect((await drain(ann)).ids).toEqual(['1', '3']);
  });

  it('speaks the older A-IM / If-None-Match protocol too', async () => {
    cosmos = await startCosmos({ inMemory: true });
    const container = await tasks(cosmos);
    await container.items.create({ id: 'x', owner: 'ann' });
    const feed = container.items.changeFeed('ann', { startFromBeginning: true });
    const page = await feed.fetchNext();
    expect(page.result.map((item) => item.id)).toEqual(['x']);
    expect(page.result[0]).toHaveProperty('_lsn');
    expect(page.etag).toMatch(/^"\d+"$/);
    expect((await feed.fetchNext()).result).toEqual([]);
  });
});

describe('persistence', () => {
  it('keeps data and change feed positions across a restart on the same state directory', async () => {
    cosmos = await startCosmos();
    let container = await tasks(cosmos);
    await container.items.create({ id: 'one', owner: 'ann', n: 1 });
    const iterator = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
    });
    const { ids, token } = await drain(iterator);
    expect(ids).toEqual(['one']);

    await cosmos.restart();
    container = await tasks(cosmos);
    expect((await container.item('one', 'ann').read()).resource?.n).toBe(1);
    await container.items.create({ id: 'two', owner: 'ann' });
    const resumed = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Continuation(token as string),
    });
    expect((await drain(resumed)).ids).toEqual(['two']);
    // A new document after a restart continues the sequence: its rid and LSN do not reuse old ones.
    const { resources } = await container.items.readAll().fetchAll();
    expect(new Set(resources.map((r) => r._rid)).size).toBe(2);
  });

  it('recovers from a kill mid-write: every acknowledged write is kept, the torn record dropped', async () => {
    const data = testDataDir();
    cosmos = await startCosmos({ dataDir: data.dir });
    const container = await tasks(cosmos);
    for (let i = 0; i < 20; i += 1) await container.items.create({ id: `k${i}`, owner: 'ann' });
    await container.items.upsert({ id: 'k0', owner: 'ann', v: 2 });
    // What the disk holds if the process died now, in the middle of writing one more record.
    const crashed = testDataDir();
    // Removed once the emulator running on it has closed (afterEach), whose stop writes its snapshot there.
    onTestFinished(crashed.remove);
    cpSync(data.dir, crashed.dir, { recursive: true });
    appendFileSync(join(crashed.dir, 'state', 'log.jsonl'), '{"t":"put","db":"TestDB","coll":"Tas');
    await cosmos.close();
    data.remove();

    cosmos = await startCosmos({ dataDir: crashed.dir });
    let after = await tasks(cosmos);
    const { resources } = await after.items.readAll().fetchAll();
    expect(resources).toHaveLength(20);
    expect((await after.item('k0', 'ann').read()).resource?.v).toBe(2);
    // New writes land on a clean log: they survive the next restart too.
    await after.items.create({ id: 'k20', owner: 'ann' });
    await cosmos.restart();
    after = await tasks(cosmos);
    expect((await after.items.readAll().fetchAll()).resources).toHaveLength(21);
  });

  it('does not let a torn line alone in the log swallow the next write', async () => {
    const data = testDataDir();
    cosmos = await startCosmos({ dataDir: data.dir });
    await (await tasks(cosmos)).items.create({ id: 'a', owner: 'ann' });
    // Stopping folds the log into the snapshot; then a kill tears the first record of the new log.
    await cosmos.close();
    appendFileSync(join(data.dir, 'state', 'log.jsonl'), '{"t":"put","db":"TestDB","coll":"Tas');
    cosmos = await startCosmos({ dataDir: data.dir });
    await (await tasks(cosmos)).items.create({ id: 'b', owner: 'ann' });
    // What the disk holds if the process were killed now (a clean stop would snapshot 'b').
    const crashed = testDataDir();
    onTestFinished(crashed.remove);
    cpSync(data.dir, crashed.dir, { recursive: true });
    await cosmos.close();
    data.remove();
    cosmos = await startCosmos({ dataDir: crashed.dir });
    const { resources } = await (await tasks(cosmos)).items.readAll().fetchAll();
    expect(resources.map((r) => r.id).sort()).toEqual(['a', 'b']);
  });
});
