/**
 * cosmosDBTrigger (extension v4 options): the container's change feed, latest-version mode, read per
 * partition key range through @azure/cosmos, with one lease document per range in the lease container
 * (`leaseContainerName`, default `leases`, partitioned by `/id`; created when
 * `createLeaseContainerIfNotExists`). A lease keeps the range's continuation, so a restarted host resumes
 * where it stopped. Leases are in the .NET change feed processor's shapes (`cosmos-leases.ts`), so a
 * real Functions host can take them over. As in the extension, the lease advances after each batch
 * whether the function succeeded or not. An outage of Cosmos DB pauses a range (logged with the
 * extension's words) until its lease can be taken again.
 */
import type { Container, FeedRange } from '@azure/cosmos';
import {
  connectionSetting,
  createdOrFound,
  hasIdentitySettings,
  newCosmosClient,
  resolveSettingReferences,
  type Settings,
} from '../connections.ts';
import type { RegisteredFunction } from '../core-api.ts';
import { type Host, IndexingError, type Listener, type TriggerBinding, type TriggerKind } from '../host.ts';
import { Outage, Pauses } from '../listeners.ts';
import { invokeWithRetries } from '../retry.ts';
import {
  acquire,
  claim,
  continuationOf,
  etagOf,
  type Lease,
  leasePrefix,
  markInitialized,
  release,
  save,
} from './cosmos-leases.ts';

const setting = (host: Host, value: unknown) =>
  value === undefined ? undefined : resolveSettingReferences(String(value), host.settings);

async function containers(host: Host, trigger: TriggerBinding) {
  const connection = String(trigger.connection ?? '');
  const database = setting(host, trigger.databaseName) ?? '';
  const account = await newCosmosClient(host.settings, connection);
  const monitored = account.client.database(database).container(setting(host, trigger.containerName) ?? '');
  const leaseAccount = await newCosmosClient(host.settings, String(trigger.leaseConnection ?? connection));
  const leaseClient = leaseAccount.client;
  const leaseDatabase = leaseClient.database(setting(host, trigger.leaseDatabaseName) ?? database);
  const leaseName = setting(host, trigger.leaseContainerName) ?? 'leases';
  // The extension's text (CosmosDBTriggerListener.StartAsync), its two spaces before "or" included.
  const missing = () =>
    new Error(
      `Either the source container '${monitored.id}' (in database '${database}')  or the lease container '${leaseName}' (in database '${leaseDatabase.id}') does not exist. Both containers must exist before the listener starts. To automatically create the lease container, set 'CreateLeaseContainerIfNotExists' to 'true'.`,
    );
  try {
    const source = await monitored.read().catch(() => undefined);
    if (!source?.resource) throw missing();
    let leases: Container;
    if (trigger.createLeaseContainerIfNotExists === true) {
      // Its database too, as the extension creates them (CosmosDBUtility.CreateDatabaseAndCollectionIfNotExistAsync).
      await createdOrFound(() => leaseClient.databases.createIfNotExists({ id: leaseDatabase.id }));
      // Time to live on with no default, as the extension sets it (each item may then carry its own).
      ({ container: leases } = await createdOrFound(() =>
        leaseDatabase.containers.createIfNotExists({ id: leaseName, partitionKey: '/id', defaultTtl: -1 }),
      ));
    } else {
      leases = leaseDatabase.container(leaseName);
      if (!(await leases.read().catch(() => undefined))?.resource) throw missing();
    }
    const { resource: db } = await monitored.database.read();
    const rid = source.resource._rid;
    const ownPrefix = setting(host, trigger.leaseContainerPrefix) ?? '';
    const prefix = leasePrefix(ownPrefix, account.endpoint, db?._rid ?? '', rid);
    // Before leases took .NET's shapes their ids kept the endpoint's port.
    const legacyPrefix = `${ownPrefix}${new URL(account.endpoint).host}_${db?._rid}_${rid}`;
    return {
      monitored,
      leases,
      leasesUrl: `${leaseAccount.endpoint}${leases.url}`,
      prefix,
      legacyPrefix,
      rid,
    };
  } catch (error) {
    // The host retries a failed start: each attempt must not leave its clients' timers behind.
    account.client.dispose();
    leaseClient.dispose();
    throw error;
  }
}

async function listen(host: Host, fn: RegisteredFunction, trigger: TriggerBinding): Promise<Listener> {
  const startTime = setting(host, trigger.startFromTime);
  // The extension's checks of its start options (CosmosDBTriggerListener), before it connects.
  if (startTime && trigger.startFromBeginning === true)
    throw new Error('Only one of StartFromBeginning or StartFromTime can be used');
  if (startTime && Number.isNaN(Date.parse(startTime)))
    throw new Error(
      "The specified StartFromTime parameter is not in the correct format. Please use the ISO 8601 format with the UTC designator. For example: '2021-02-16T14:19:29Z'.",
    );
  // Loaded only for apps with a Cosmos DB function: the SDK costs a quarter of a second of start time.
  const { ChangeFeedStartFrom } = await import('@azure/cosmos');
  const { monitored, leases, leasesUrl, prefix, legacyPrefix, rid } = await containers(host, trigger);
  // As the extension's listener: only a positive value replaces the processor's default (5 s; no limit).
  const positive = (value: unknown) => (Number(value) > 0 ? Number(value) : undefined);
  const pollMs = positive(trigger.feedPollDelay) ?? 5000;
  const maxItemCount = positive(trigger.maxItemsPerInvocation);
  const ranges = await monitored.getFeedRanges();
  const { resources: rangeIds } = await monitored.readPartitionKeyRanges().fetchAll();
  const pauses = new Pauses();

  /** Reads one range's feed from its lease until stopped; throws when the store fails. */
  const follow = async (lease: Lease, range: FeedRange, outage: Outage) => {
    const changeFeedStartFrom = lease.ContinuationToken
      ? ChangeFeedStartFrom.Continuation(continuationOf(rid, range, lease.ContinuationToken))
      : startTime
        ? ChangeFeedStartFrom.Time(new Date(startTime), range)
        : trigger.startFromBeginning === true
          ? ChangeFeedStartFrom.Beginning(range)
          : ChangeFeedStartFrom.Now(range);
    const feed = monitored.items.getChangeFeedIterator({ changeFeedStartFrom, maxItemCount });
    while (!pauses.stopped) {
      const page = await feed.readNext();
      outage.recovered();
      if (page.statusCode === 304 || page.result.length === 0) {
        // Pin a lease that starts "now" to where now was, so changes made while the host is down are not lost.
        if (!lease.ContinuationToken && page.continuationToken) {
          lease.ContinuationToken = etagOf(page.continuationToken);
          await save(leases, lease, host.clock);
        }
        await pauses.pause(pollMs, host.clock);
        continue;
      }
      // The extension's reason, its time as .NET's round-trip ("o") format writes it: seven decimals.
      const now = host.clock.date().toISOString().replace(/Z$/, '0000Z');
      const reason = `New changes on container ${monitored.id} at ${now}`;
      const input = {
        inputData: [{ name: trigger.name, data: { json: JSON.stringify(page.result) } }],
        reason,
      };
      const outcome = await invokeWithRetries(host, fn, input, pauses);
      // Retries cut short by the stop: the lease stays, the batch is read again (at least once).
      if (pauses.stopped) break;
      // The extension's health monitor says so (CosmosDBTriggerHealthMonitor.OnErrorAsync), and moves on.
      if (!outcome.succeeded)
        host.logs.host(
          'warning',
          `Lease ${lease.LeaseToken} encountered an unhandled user exception during processing.`,
        );
      // Advanced in memory first: if saving it fails, the retry saves it rather than run the batch again.
      lease.ContinuationToken = etagOf(page.continuationToken);
      await save(leases, lease, host.clock);
    }
  };

  /**
   * One range, through outages of Cosmos DB (a restart, a network failure): the processor logs them,
   * waits with backoff, takes its lease again and reads on from it, as the extension's processor does.
   */
  const pump = async (range: FeedRange, index: number) => {
    // A lease is named after its partition key range's id (this host named it by the range's index).
    const token =
      rangeIds.find((pkRange) => pkRange.minInclusive === range.minInclusive)?.id ?? String(index);
    const ids = { id: `${prefix}..${token}`, legacyId: `${legacyPrefix}..${index}` };
    const outage = new Outage({
      down: (error, failures, retryInMs) => {
        const retry = `(retry ${failures} in ${Math.round(retryInMs / 1000)} s)`;
        // As the extension's health monitor tells them apart: a timeout or an unavailable (or unreachable)
        // store is transient; any other answer of Cosmos DB (401, 403, 404 …) is an error.
        const status = (error as { code?: unknown }).code;
        if (typeof status === 'number' && status !== 408 && status !== 503)
          host.logs.host(
            'error',
            `Lease ${token} experienced an error during processing. ${error.message} ${retry}`,
          );
        else
          host.logs.host(
            'warning',
            `Lease ${token} experiencing transient connectivity issues. ${error.message} ${retry}`,
          );
      },
      up: () => host.logs.host('information', `Lease ${token} was acquired to start processing.`),
    });
    const key = `${leasesUrl}/${ids.id}`;
    const holder = claim(key, fn.name);
    if (holder !== undefined) {
      host.logs.host(
        'warning',
        `Lease ${token} of 'Functions.${fn.name}' is held by 'Functions.${holder}': both follow ${monitored.id} with the same lease container and prefix, so only one of them is triggered, as in Azure. Give each function its own leaseContainerPrefix.`,
      );
      return;
    }
    let lease: Lease | undefined;
    while (!pauses.stopped) {
      try {
        // After an outage, with what this host last knew of it (newer than the stored one).
        lease = lease
          ? await save(leases, lease, host.clock)
          : await acquire(leases, ids, range, host.hostId, host.clock);
        leased.add(index);
        if (leased.size === ranges.length) await markInitialized(leases, prefix);
        await follow(lease, range, outage);
      } catch (error) {
        if (!pauses.stopped) await pauses.pause(outage.failed(error));
      }
    }
    release(key);
    // A stopping processor releases its leases (no owner), so the next host takes them at once; one
    // that cannot be released now (Cosmos DB just failed) expires, as in Azure.
    if (lease && outage.failures === 0) {
      lease.Owner = null;
      await save(leases, lease, host.clock).catch(() => undefined);
    }
  };

  const leased = new Set<number>();
  const pumps = ranges.map((range, index) => pump(range, index));
  return {
    async stop() {
      pauses.stop();
      await Promise.all(pumps);
    },
  };
}

/**
 * The extension's checks as it indexes the trigger (CosmosDBTriggerAttributeBindingProvider): a
 * connection (or lease connection) neither set nor given by `<name>__…` identity settings, or a lease
 * container that is the monitored one (its leases would be changes of the feed they follow), puts the
 * function in error, in its words, wrapped as its binding provider wraps them.
 */
function checkTrigger(settings: Settings, trigger: TriggerBinding): void {
  const value = (property: unknown, otherwise = '') =>
    property === undefined ? otherwise : resolveSettingReferences(String(property), settings);
  const connection = String(trigger.connection ?? '');
  const leaseConnection = String(trigger.leaseConnection ?? connection);
  const database = value(trigger.databaseName);
  const container = value(trigger.containerName);
  const lease = value(trigger.leaseContainerName, 'leases');
  const leaseDatabase = value(trigger.leaseDatabaseName, database);
  const refuse = (reason: string) =>
    new IndexingError(
      `Cannot create container information for ${container} in database ${database} with lease ${lease} in database ${leaseDatabase} : ${reason} Microsoft.Azure.WebJobs.Extensions.CosmosDB: ${reason}`,
      'Microsoft.Azure.WebJobs.Extensions.CosmosDB',
    );
  for (const name of [connection, leaseConnection]) {
    if (connectionSetting(settings, name) || hasIdentitySettings(settings, name)) continue;
    throw refuse(
      `Cosmos DB connection configuration '${name}' does not exist. Make sure that it is a defined App Setting.`,
    );
  }
  // The extension compares the setting names and the container names, ignoring case.
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  if (same(connection, leaseConnection) && same(database, leaseDatabase) && same(container, lease))
    throw refuse('The monitored container cannot be the same as the container storing the leases.');
}

export const cosmosDBTrigger: TriggerKind = {
  type: 'cosmosDBTrigger',
  listen,
  index: checkTrigger,
  /** The admin input is the documents as a JSON array (or one document). */
  async adminInput(_host, _fn, trigger, input) {
    let documents: unknown;
    try {
      documents = JSON.parse(input);
    } catch {
      throw new Error('the input of a Cosmos DB function is the documents as JSON');
    }
    const data = { json: JSON.stringify(Array.isArray(documents) ? documents : [documents]) };
    return {
      inputData: [{ name: trigger.name, data }],
      reason: 'This function was programmatically called via the host APIs.',
    };
  },
};
