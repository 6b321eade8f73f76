/**
 * What the topology declares exists from the start, as the Azure template creates it: a fresh account
 * has TasksDB with Tasks and leases (partition key /id); a restart keeps what is there, data and
 * settings alike, and brings back a declared container that was deleted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CosmosFixture, startCosmos } from './testing.ts';

let cosmos: CosmosFixture;
beforeAll(async () => {
  cosmos = await startCosmos();
});
afterAll(() => cosmos?.close());

describe('provisioning from the topology', () => {
  it('a fresh account has the declared databases and containers with their partition keys', async () => {
    const declared = cosmos.context.topology.cosmos.databases;
    expect(declared.map((d) => d.id)).toEqual(['TasksDB']);
    const client = cosmos.client();
    const { resources: databases } = await client.databases.readAll().fetchAll();
    expect(databases.map((d) => d.id)).toEqual(['TasksDB']);
    const { resources: containers } = await client.database('TasksDB').containers.readAll().fetchAll();
    expect(containers.map((c) => [c.id, c.partitionKey?.paths]).sort()).toEqual([
      ['Tasks', ['/id']],
      ['leases', ['/id']],
    ]);
  });

  it('a restart keeps items and container settings, and re-creates a declared container that was deleted', async () => {
    const database = cosmos.client().database('TasksDB');
    await database.container('Tasks').items.create({ id: 'kept', title: 'survives' });
    const tasks = (await database.container('Tasks').read()).resource;
    await database
      .container('Tasks')
      .replace({ ...tasks, id: 'Tasks', partitionKey: tasks?.partitionKey, defaultTtl: 3600 });
    await database.container('leases').delete();

    await cosmos.restart();

    const after = cosmos.client().database('TasksDB');
    expect((await after.container('Tasks').item('kept', 'kept').read()).resource?.title).toBe('survives');
    expect((await after.container('Tasks').read()).resource?.defaultTtl).toBe(3600);
    expect((await after.container('leases').read()).resource?.partitionKey?.paths).toEqual(['/id']);
  });
});
