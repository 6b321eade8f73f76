/** The Cosmos DB trigger against the stack's Cosmos emulator, written to with @azure/cosmos: change feed, leases, restart. */
import { join } from 'node:path';
import { ChangeFeedStartFrom, type Container, CosmosClient } from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testContext, testDataDir, waitFor } from '../core/testing.ts';
import { NO_IDENTITY } from '../cosmos/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { createdOrFound } from './connections.ts';
import { appPath, hostIdOf, readLog } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let cosmos: ComponentUnderTest;
let host: ComponentUnderTest;
let client: CosmosClient;
let tasks: Container;
let hostId: string;

const changed = (id: string, title: string) =>
  readLog(logFile).filter((e) => e.message === `changed ${id} ${title}`);

beforeAll(async () => {
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
  await tasks.items.create({ id: 'before-start', Title: 'Early' });
  await database.containers.createIfNotExists({ id: 'Doomed', partitionKey: '/id' });
  const settings = {
    AzureWebJobsSecretStorageType: 'files',
    DocumentDbConnection: `AccountEndpoint=${endpoint};AccountKey=${secrets.cosmosKey};`,
  };
  host = await startComponent(
    'functions',
    { port: 0, appDir: appPath('app-esm'), logFile, settings },
    data.dir,
  );
  hostId = await hostIdOf(host, secrets.masterKey);
});

afterAll(async () => {
  await host?.stop();
  client?.dispose();
  await cosmos?.stop();
  data.remove();
});

describe('Cosmos DB trigger', () => {
  it('delivers the change feed from the beginning (startFromBeginning) and then new changes', async () => {
    await waitFor('the document written before start', () => changed('before-start', 'Early').length === 1);
    await tasks.items.create({ id: 'a', Title: 'A' });
    await tasks.items.create({ id: 'b', Title: 'B' });
    await waitFor('a and b', () => changed('a', 'A').length === 1 && changed('b', 'B').length === 1);
    const executing = readLog(logFile).find(
      (e) => e.function === 'onTaskChange' && e.message.startsWith('Executing'),
    );
    expect(executing?.message).toMatch(
      /Reason='New changes on container Tasks at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z'/,
    );
  });

  it("moves its lease past a batch whose run failed, with the extension's warning: no retry", async () => {
    const warning = 'Lease 0 encountered an unhandled user exception during processing.';
    await tasks.items.create({ id: 'f', Title: 'Fails' });
    await waitFor('the warning', () => readLog(logFile).some((e) => e.message === warning), 10_000);
    await tasks.items.create({ id: 'g', Title: 'G' });
    await waitFor('the next change', () => changed('g', 'G').length === 1);
    expect(changed('f', 'Fails')).toHaveLength(1);
    expect(readLog(logFile).find((e) => e.message === warning)?.level).toBe('warning');
  });

  it("keeps one lease per partition key range in the .NET change feed processor's shapes", async () => {
    const { resource: database } = await client.database('TasksDB').read();
    const { resource: container } = await tasks.read();
    const prefix = `127.0.0.1_${database?._rid}_${container?._rid}`;
    const leases = client.database('TasksDB').container('leases');
    const stored = ({ _rid, _self, _etag, _attachments, _ts, ...document }: Record<string, unknown>) =>
      document;
    // The feed's ETag now, as a read from now answers it: the lease is past every change.
    const now = await tasks.items
      .getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() })
      .readNext();
    const etag = JSON.parse(now.continuationToken).Continuation[0].continuationToken;
    expect(etag).toMatch(/^"\d+"$/);
    // The run logged its documents before its lease moved: wait for the move.
    await waitFor('the lease past every change', async () => {
      const { resource } = await leases.item(`${prefix}..0`, `${prefix}..0`).read();
      return resource?.ContinuationToken === etag;
    });
    const { resources } = await leases.items.readAll().fetchAll();
    expect(resources.map(stored)).toEqual([
      {
        id: `${prefix}..0`,
        version: 0,
        LeaseToken: '0',
        FeedRange: { Range: { min: '', max: 'FF' } },
        Owner: hostId,
        ContinuationToken: etag,
        properties: {},
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        Mode: 'Incremental Feed',
      },
      { id: `${prefix}.info` },
    ]);
  });

  it('creates the lease container in a database of its own, the database too, with time to live on', async () => {
    await waitFor('the run with leases in LeasesDB', () =>
      readLog(logFile).some((e) => e.message === 'own lease database saw before-start'),
    );
    const leases = client.database('LeasesDB').container('leases');
    expect((await leases.read()).resource).toMatchObject({
      partitionKey: { paths: ['/id'] },
      defaultTtl: -1,
    });
    const { resources } = await leases.items.readAll().fetchAll();
    expect(resources.map((lease) => lease.id)).toEqual([
      expect.stringMatching(/\.\.0$/),
      expect.stringMatching(/\.info$/),
    ]);
  });

  it('triggers one function of two that share a lease container and prefix, as Azure does, and says so', async () => {
    const saw = (name: string) => readLog(logFile).some((e) => e.message === `${name} saw before-start`);
    await waitFor(
      'ownPrefix and one of the two',
      () => saw('ownPrefix') && (saw('sharedLeasesA') || saw('sharedLeasesB')),
    );
    const [winner, loser] = saw('sharedLeasesA')
      ? ['sharedLeasesA', 'sharedLeasesB']
      : ['sharedLeasesB', 'sharedLeasesA'];
    const warning = `Lease 0 of 'Functions.${loser}' is held by 'Functions.${winner}': both follow Tasks with the same lease container and prefix, so only one of them is triggered, as in Azure. Give each function its own leaseContainerPrefix.`;
    await waitFor('the warning', () =>
      readLog(logFile).some((e) => e.message === warning && e.level === 'warning'),
    );
    expect(saw(loser)).toBe(false);
    // The three create the lease container at once: the one whose create comes second finds it (409,
    // read again, as the extension's .NET SDK does), rather than failing its start until a retry.
    expect(
      readLog(logFile).filter((e) =>
        /^The listener for function 'Functions\.(sharedLeases[AB]|ownPrefix)' was unable/.test(e.message),
      ),
    ).toEqual([]);
  });

  it('finds a lease container another caller created between its read and its create (409: read again)', async () => {
    const containers = client.database('TasksDB').containers;
    const raced = { id: 'raced', partitionKey: '/id' };
    await containers.create(raced); // the other caller's
    // The SDK's createIfNotExists found nothing at its read, then creates: 409. Then it reads again.
    const attempts = [() => containers.create(raced), () => containers.createIfNotExists(raced)];
    const { resource } = await createdOrFound(() =>
      (attempts.shift() as () => ReturnType<typeof containers.create>)(),
    );
    expect(resource?.id).toBe('raced');
    expect(attempts).toEqual([]);
  });

  it('waits its poll delay in stack time: moving the clock ends it', async () => {
    // The listener starts "now": once its lease holds a continuation, it has read and is waiting an hour.
    const leases = client.database('TasksDB').container('hourlyLeases');
    await waitFor('the hourly lease pinned', async () => {
      const { resources } = await leases.items.readAll<{ ContinuationToken: string | null }>().fetchAll();
      return resources.some((lease) => lease.ContinuationToken);
    });
    await tasks.items.create({ id: 'h', Title: 'H' });
    await host.advanceClock(3_600_000);
    await waitFor('the hourly run', () => readLog(logFile).some((e) => e.message === 'hourly h'));
  });

  it('waits the default 5 s between polls when feedPollDelay is 0, as the extension does', async () => {
    const leases = client.database('TasksDB').container('noPollDelayLeases');
    const tokens = async () => {
      const { resources } = await leases.items.readAll<{ ContinuationToken: string | null }>().fetchAll();
      return resources
        .map((lease) => lease.ContinuationToken)
        .filter(Boolean)
        .join();
    };
    const pinned = await waitFor('the lease pinned', tokens);
    // Its 5 s began at a poll of its own, at a time the test knows: one that ran `y`, brought forward by a
    // clock move (otherwise it began at an earlier test's clock move, at a time no test knows, and on a
    // busy machine the 5 s could end before the check below).
    await tasks.items.create({ id: 'y', Title: 'Y' });
    await host.advanceClock(5_000);
    await waitFor('the run of y', () => readLog(logFile).some((e) => e.message === 'no poll delay y'));
    // A batch run, the listener saves its lease and reads the feed again at once, as the processor does;
    // only that read, found empty, starts the 5 s. It leaves once the save is answered, and this test sees
    // the save by reading the leases: on a busy machine its next write can reach the store before that read
    // (which then carries it, and runs it at once). Nothing the host shows tells when the read has left, so
    // a write run at once is written again, after the save of its own batch: three in a row is a listener
    // that does not pause.
    const savedPast = (what: string, previous: string) =>
      waitFor(`the lease saved past ${what}`, async () => {
        const now = await tokens();
        return now !== previous && now;
      });
    let saved = await savedPast('y', pinned);
    const seen = (id: string) => readLog(logFile).some((e) => e.message === `no poll delay ${id}`);
    let id = '';
    for (let attempt = 1; attempt <= 3; attempt++) {
      id = `z${attempt}`;
      await tasks.items.create({ id, Title: 'Z' });
      // onTaskChange polls every 200 ms: once it has the change, a listener polling without pause had it too.
      await waitFor(`onTaskChange to see ${id}`, () => changed(id, 'Z').length === 1);
      if (!seen(id)) break;
      saved = await savedPast(id, saved);
    }
    expect(seen(id)).toBe(false);
    await host.advanceClock(5_000);
    await waitFor('the run after the default delay', () => seen(id));
  });

  it("tells an answer of Cosmos DB other than a timeout or unavailability from an outage, as the extension's health monitor", async () => {
    const leases = client.database('TasksDB').container('doomedLeases');
    await waitFor('the doomed lease pinned', async () => {
      const { resources } = await leases.items.readAll<{ ContinuationToken: string | null }>().fetchAll();
      return resources.some((lease) => lease.ContinuationToken);
    });
    await client.database('TasksDB').container('Doomed').delete();
    const error = () =>
      readLog(logFile).find((e) => e.message.startsWith('Lease 0 experienced an error during processing. '));
    await waitFor("the extension's error", () => error() !== undefined);
    expect(error()?.level).toBe('error');
    expect(error()?.message).toMatch(/ \(retry 1 in \d+ s\)$/);
  });

  it('resumes from the lease after a restart: changes made while down arrive, nothing repeats', async () => {
    await host.stop();
    // Released as it stopped, as the change feed processor releases its leases: no owner.
    const { resources } = await client.database('TasksDB').container('leases').items.readAll().fetchAll();
    expect(resources.filter((lease) => 'Owner' in lease).map((lease) => lease.Owner)).toEqual([null]);
    await tasks.items.create({ id: 'c', Title: 'C' });
    await tasks.items.upsert({ id: 'a', Title: 'A2' });
    // The stop ended the retries of the listener that cannot start (below) without being killed.
    expect(host.output.join('\n')).not.toContain('did not stop within');
    await host.start();
    await waitFor(
      'the changes made while down',
      () => changed('c', 'C').length === 1 && changed('a', 'A2').length === 1,
    );
    expect(changed('b', 'B')).toHaveLength(1);
    expect(changed('before-start', 'Early')).toHaveLength(1);
  });

  it('takes over a lease as this host wrote it before (id with the port, the JS SDK token): nothing runs twice', async () => {
    await host.stop();
    const leases = client.database('TasksDB').container('leases');
    const { resources } = await leases.items.readAll<{ id: string; ContinuationToken: string }>().fetchAll();
    const lease = resources.find((document) => document.id.endsWith('..0'));
    const { resource: container } = await tasks.read();
    const port = new URL(cosmos.endpoints.cosmos as string).port;
    const legacy = {
      id: lease?.id.replace('127.0.0.1_', `127.0.0.1:${port}_`),
      LeaseToken: '0',
      FeedRange: { minInclusive: '', maxExclusive: 'FF' },
      Owner: hostId,
      ContinuationToken: JSON.stringify({
        rid: container?._rid,
        Continuation: [{ minInclusive: '', maxExclusive: 'FF', continuationToken: lease?.ContinuationToken }],
      }),
      timestamp: new Date().toISOString(),
      version: 1,
    };
    for (const { id } of resources) await leases.item(id, id).delete();
    await leases.items.create(legacy);
    await tasks.items.create({ id: 'd', Title: 'D' });
    await host.start();
    await waitFor('the change made while down', () => changed('d', 'D').length === 1);
    for (const [id, title] of [
      ['c', 'C'],
      ['a', 'A2'],
      ['b', 'B'],
      ['before-start', 'Early'],
    ])
      expect(changed(id as string, title as string)).toHaveLength(1);
    await waitFor('the lease under its own id', async () => {
      const { resource } = await leases.item(lease?.id as string, lease?.id as string).read();
      return resource?.ContinuationToken?.startsWith('"');
    });
  });

  it("puts a trigger whose connection no setting names in error, in the extension's words", () => {
    expect(readLog(logFile).map((e) => e.message)).toContain(
      "The 'unconnected' function is in error: Microsoft.Azure.WebJobs.Host: Error indexing method 'Functions.unconnected'. Microsoft.Azure.WebJobs.Extensions.CosmosDB: Cannot create container information for Tasks in database TasksDB with lease leases in database TasksDB : Cosmos DB connection configuration 'NoSuchCosmos' does not exist. Make sure that it is a defined App Setting. Microsoft.Azure.WebJobs.Extensions.CosmosDB: Cosmos DB connection configuration 'NoSuchCosmos' does not exist. Make sure that it is a defined App Setting.",
    );
  });

  it("puts a trigger whose leases would live in the container it follows in error, in the extension's words", () => {
    expect(readLog(logFile).map((e) => e.message)).toContain(
      "The 'ownLeases' function is in error: Microsoft.Azure.WebJobs.Host: Error indexing method 'Functions.ownLeases'. Microsoft.Azure.WebJobs.Extensions.CosmosDB: Cannot create container information for Tasks in database TasksDB with lease Tasks in database TasksDB : The monitored container cannot be the same as the container storing the leases. Microsoft.Azure.WebJobs.Extensions.CosmosDB: The monitored container cannot be the same as the container storing the leases.",
    );
    expect(readLog(logFile).some((e) => e.message.startsWith('own leases saw'))).toBe(false);
  });

  it('refuses to start without a lease container unless asked to create it', async () => {
    await waitFor('the listener error', () =>
      readLog(logFile).some(
        (e) =>
          e.message ===
          "The listener for function 'Functions.withoutLeases' was unable to start. Either the source container 'Tasks' (in database 'TasksDB')  or the lease container 'absent' (in database 'TasksDB') does not exist. Both containers must exist before the listener starts. To automatically create the lease container, set 'CreateLeaseContainerIfNotExists' to 'true'.",
      ),
    );
  });

  it("refuses startFromTime with startFromBeginning, and one that is no time, in the extension's words", async () => {
    const refusals = [
      "The listener for function 'Functions.bothStarts' was unable to start. Only one of StartFromBeginning or StartFromTime can be used",
      "The listener for function 'Functions.badStartTime' was unable to start. The specified StartFromTime parameter is not in the correct format. Please use the ISO 8601 format with the UTC designator. For example: '2021-02-16T14:19:29Z'.",
    ];
    await waitFor('both listener errors', () =>
      refusals.every((refusal) => readLog(logFile).some((e) => e.message === refusal)),
    );
  });

  it('retries that start in the background and runs the function once the lease container exists', async () => {
    const messages = () => readLog(logFile).map((e) => e.message);
    await client.database('TasksDB').containers.createIfNotExists({ id: 'absent', partitionKey: '/id' });
    await waitFor(
      'the retried start',
      () =>
        messages().some((m) =>
          /^Listener successfully started for function 'Functions\.withoutLeases' after \d+ retries\.$/.test(
            m,
          ),
        ),
      20_000,
    );
    expect(messages()).toContain(
      "Retrying to start listener for function 'Functions.withoutLeases' (Attempt 1)",
    );
    await tasks.items.create({ id: 'late', Title: 'Late' });
    await waitFor('the late listener run', () => messages().includes('late listener saw late'));
  });
});
