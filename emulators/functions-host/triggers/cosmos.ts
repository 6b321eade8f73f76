/**
 * cosmosDBTrigger (extension v4 options): the container's change feed, latest-version mode, read per
 * partition key range through @azure/cosmos, with one lease document per range in the lease container
 * (`leaseContainerName`, default `leases`, partitioned by `/id`; created when
 * `createLeaseContainerIfNotExists`). A lease keeps the range's continuation, so a restarted host resumes
 * where it stopped. The lease document ids follow the change feed processor's
 * `<prefix><account>_<databaseRid>_<containerRid>..<range>`; the continuation stored is the JS SDK's
 * token (the .NET processor stores the bare LSN), so leases are not shared with a .NET host. As in the
 * extension, the lease advances after each batch whether the function succeeded or not.
 */
import type { Container, CosmosClient, FeedRange } from '@azure/cosmos';
import { appCredential, connectionSetting, resolveSettingReferences } from '../connections.ts';
import type { RegisteredFunction } from '../core-api.ts';
import type { Host, Listener, TriggerBinding, TriggerKind } from '../host.ts';

interface Lease {
  id: string;
  LeaseToken: string;
  FeedRange: unknown;
  Owner: string;
  ContinuationToken: string | null;
  timestamp: string;
  version: number;
}

const setting = (host: Host, value: unknown) =>
  value === undefined ? undefined : resolveSettingReferences(String(value), host.settings);

type CosmosSdk = typeof import('@azure/cosmos');

function clientFor(
  { CosmosClient }: CosmosSdk,
  host: Host,
  name: string,
): { client: CosmosClient; endpoint: string } {
  const connection = connectionSetting(host.settings, name);
  const connectionPolicy = { enableEndpointDiscovery: false };
  if (connection) {
    const { endpoint, key } = parseConnection(connection);
    return { client: new CosmosClient({ endpoint, key, connectionPolicy }), endpoint };
  }
  const endpoint = host.settings[`${name}__accountEndpoint`];
  if (!endpoint)
    throw new Error(`Cosmos DB connection '${name}' is not configured: set the app setting ${name}`);
  return {
    client: new CosmosClient({ endpoint, aadCredentials: appCredential(), connectionPolicy }),
    endpoint,
  };
}

function parseConnection(connection: string): { endpoint: string; key: string } {
  const parts = Object.fromEntries(
    connection.split(';').flatMap((part) => {
      const at = part.indexOf('=');
      return at > 0 ? [[part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim()]] : [];
    }),
  );
  if (!parts.accountendpoint || !parts.accountkey)
    throw new Error('a Cosmos DB connection string needs AccountEndpoint and AccountKey');
  return { endpoint: parts.accountendpoint, key: parts.accountkey };
}

async function containers(sdk: CosmosSdk, host: Host, trigger: TriggerBinding) {
  const connection = String(trigger.connection ?? '');
  const database = setting(host, trigger.databaseName) ?? '';
  const account = clientFor(sdk, host, connection);
  const monitored = account.client.database(database).container(setting(host, trigger.containerName) ?? '');
  const leaseClient = clientFor(sdk, host, String(trigger.leaseConnection ?? connection)).client;
  const leaseDatabase = leaseClient.database(setting(host, trigger.leaseDatabaseName) ?? database);
  const leaseName = setting(host, trigger.leaseContainerName) ?? 'leases';
  const missing = () =>
    new Error(
      `Either the source container '${monitored.id}' (in database '${database}') or the lease container '${leaseName}' (in database '${leaseDatabase.id}') does not exist. Both containers must exist before the listener starts. To automatically create the lease container, set 'CreateLeaseContainerIfNotExists' to 'true'.`,
    );
  try {
    const source = await monitored.read().catch(() => undefined);
    if (!source?.resource) throw missing();
    let leases: Container;
    if (trigger.createLeaseContainerIfNotExists === true) {
      ({ container: leases } = await leaseDatabase.containers.createIfNotExists({
        id: leaseName,
        partitionKey: '/id',
      }));
    } else {
      leases = leaseDatabase.container(leaseName);
      if (!(await leases.read().catch(() => undefined))?.resource) throw missing();
    }
    const { resource: db } = await monitored.database.read();
    const prefix = `${setting(host, trigger.leaseContainerPrefix) ?? ''}${new URL(account.endpoint).host}_${db?._rid}_${source.resource._rid}`;
    return { monitored, leases, prefix };
  } catch (error) {
    // The host retries a failed start: each attempt must not leave its clients' timers behind.
    account.client.dispose();
    leaseClient.dispose();
    throw error;
  }
}

async function acquire(
  leases: Container,
  id: string,
  range: FeedRange,
  owner: string,
  clock: Host['clock'],
): Promise<Lease> {
  const { resource } = await leases.item(id, id).read<Lease>();
  const lease: Lease = {
    id,
    LeaseToken: id.slice(id.lastIndexOf('..') + 2),
    FeedRange: range,
    ContinuationToken: null,
    version: 1,
    ...resource,
    Owner: owner,
    timestamp: clock.date().toISOString(),
  };
  await leases.items.upsert(lease);
  return lease;
}

async function listen(host: Host, fn: RegisteredFunction, trigger: TriggerBinding): Promise<Listener> {
  // Loaded only for apps with a Cosmos DB function: the SDK costs a quarter of a second of start time.
  const sdk = await import('@azure/cosmos');
  const { ChangeFeedStartFrom } = sdk;
  const { monitored, leases, prefix } = await containers(sdk, host, trigger);
  const pollMs = Number(trigger.feedPollDelay ?? 5000);
  const maxItemCount =
    trigger.maxItemsPerInvocation === undefined ? undefined : Number(trigger.maxItemsPerInvocation);
  const startTime = setting(host, trigger.startFromTime);
  const ranges = await monitored.getFeedRanges();
  let stopped = false;
  const wakers = new Set<() => void>();
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      wakers.add(wake);
    });

  const pump = async (range: FeedRange, index: number) => {
    const lease = await acquire(leases, `${prefix}..${index}`, range, host.hostId, host.clock);
    const changeFeedStartFrom = lease.ContinuationToken
      ? ChangeFeedStartFrom.Continuation(lease.ContinuationToken)
      : startTime
        ? ChangeFeedStartFrom.Time(new Date(startTime), range)
        : trigger.startFromBeginning === true
          ? ChangeFeedStartFrom.Beginning(range)
          : ChangeFeedStartFrom.Now(range);
    const feed = monitored.items.getChangeFeedIterator({ changeFeedStartFrom, maxItemCount });
    while (!stopped) {
      const page = await feed.readNext();
      if (page.statusCode === 304 || page.result.length === 0) {
        // Pin a lease that starts "now" to where now was, so changes made while the host is down are not lost.
        if (!lease.ContinuationToken && page.continuationToken) {
          lease.ContinuationToken = page.continuationToken;
          await leases.items.upsert(lease);
        }
        await pause(pollMs);
        continue;
      }
      const reason = `New changes on container ${monitored.id} at ${host.clock.date().toISOString()}`;
      await host.invoker.invoke(fn, {
        inputData: [{ name: trigger.name, data: { json: JSON.stringify(page.result) } }],
        reason,
      });
      lease.ContinuationToken = page.continuationToken;
      lease.timestamp = host.clock.date().toISOString();
      await leases.items.upsert(lease);
    }
  };

  const pumps = ranges.map((range, index) =>
    pump(range, index).catch((error: Error) => {
      if (!stopped)
        host.logs.host('error', `change feed of 'Functions.${fn.name}' stopped: ${error.message}`);
    }),
  );
  return {
    async stop() {
      stopped = true;
      for (const wake of wakers) wake();
      await Promise.all(pumps);
    },
  };
}

export const cosmosDBTrigger: TriggerKind = {
  type: 'cosmosDBTrigger',
  listen,
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
