import type { IncomingHttpHeaders } from 'node:http';
import type { StackClock } from '../core/clock.ts';
import type { Account } from './account.ts';
import type { Target } from './auth.ts';
import type { Container } from './container.ts';
import { errors } from './errors.ts';
import { normalizePartitionKey } from './model.ts';
import { parseQuerySpec, runQuery } from './query.ts';
import type { Store } from './store.ts';

/** A request as handlers see it: the address, headers, and the body parsed on demand. */
export interface CosmosRequest {
  method: string;
  target: Target;
  headers: IncomingHttpHeaders;
  body(): Promise<unknown>;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Service {
  account: Account;
  store: Store;
  clock: StackClock;
  /** The address clients use, for the account's location list. */
  endpoint: string;
}

export type Handler = (request: CosmosRequest, service: Service) => Promise<Reply> | Reply;

/** Cosmos's default page size when the client sends no `x-ms-max-item-count` (or -1). */
const DEFAULT_PAGE = 100;

export function pageSize(headers: IncomingHttpHeaders): number {
  const value = Number(headers['x-ms-max-item-count'] ?? DEFAULT_PAGE);
  return Number.isInteger(value) && value > 0 ? value : DEFAULT_PAGE;
}

/** A page of a feed in Cosmos's envelope (`{ _rid, Documents, _count }`) with its continuation header. */
export function feed(name: string, rid: string, result: unknown[], continuation?: string): Reply {
  const headers: Record<string, string> = { 'x-ms-item-count': String(result.length) };
  if (continuation) headers['x-ms-continuation'] = continuation;
  return { status: 200, body: { _rid: rid, [name]: result, _count: result.length }, headers };
}

/** Lists or queries (POST with a query body) a set of resources. */
export async function listOrQuery(
  request: CosmosRequest,
  name: string,
  rid: string,
  resources: object[],
): Promise<Reply> {
  const spec =
    request.method === 'POST' ? parseQuerySpec(await request.body()) : { query: 'SELECT * FROM root' };
  const continuation = request.headers['x-ms-continuation'] as string | undefined;
  const { result, continuation: next } = runQuery(resources, spec, pageSize(request.headers), continuation);
  return feed(name, rid, result, next);
}

/**
 * The account's name: its `id`, and the name Cosmos puts in its RBAC messages. Not "localhost" (the
 * official emulator's), for which the SDK ignores the location list and reads the account before every
 * request; Azure's accounts have their own name and the SDK caches their locations.
 */
export const ACCOUNT = 'taskstack-cosmos';

/** A Host header fit to be put back into a URL. */
const HOST = /^[\w.:[\]-]+$/;

/**
 * The database account: the SDK reads it first and sends later requests to its listed locations. The one
 * location is the address the client came by (its Host header: 127.0.0.1 or localhost), so it stays there.
 */
export const readAccount: Handler = ({ headers }, { endpoint }) => {
  const host = headers.host;
  const address = host && HOST.test(host) ? `https://${host}/` : endpoint;
  const location = { name: 'South Central US', databaseAccountEndpoint: address };
  return {
    status: 200,
    body: {
      _self: '',
      id: ACCOUNT,
      _rid: ACCOUNT,
      media: '//media/',
      addresses: '//addresses/',
      _dbs: '//dbs/',
      writableLocations: [location],
      readableLocations: [location],
      enableMultipleWriteLocations: false,
      userReplicationPolicy: { asyncReplication: false, minReplicaSetSize: 1, maxReplicasetSize: 4 },
      userConsistencyPolicy: { defaultConsistencyLevel: 'Session' },
      systemReplicationPolicy: { minReplicaSetSize: 1, maxReplicasetSize: 4 },
      readPolicy: { primaryReadCoefficient: 1, secondaryReadCoefficient: 1 },
      queryEngineConfiguration: JSON.stringify({
        maxSqlQueryInputLength: 262144,
        maxJoinsPerSqlQuery: 5,
        maxLogicalAndPerSqlQuery: 500,
        maxLogicalOrPerSqlQuery: 500,
        maxUdfRefPerSqlQuery: 10,
        maxInExpressionItemsCount: 16000,
        queryMaxInMemorySortDocumentCount: 500,
        maxQueryRequestTimeoutFraction: 0.9,
        sqlAllowNonFiniteNumbers: false,
        sqlAllowAggregateFunctions: true,
        sqlAllowSubQuery: true,
        sqlAllowScalarSubQuery: true,
        allowNewKeywords: true,
        sqlAllowLike: false,
        sqlAllowGroupByClause: false,
        maxSpatialQueryCells: 12,
        spatialMaxGeometryPointCount: 256,
        sqlAllowTop: true,
        enableSpatialIndexing: true,
      }),
    },
  };
};

const ok = (resource: { _etag: string }, status = 200): Reply => ({
  status,
  body: resource,
  headers: { etag: resource._etag },
});
/** Positions of the ids in `dbs/{db}/colls/{coll}/docs/{doc}`. */
export const DB = 1;
export const COLL = 3;
export const DOC = 5;
export const id = (request: CosmosRequest, index: number) => request.target.segments[index] as string;

export const databases = {
  list: (request: CosmosRequest, { account }: Service) =>
    listOrQuery(
      request,
      'Databases',
      '',
      [...account.databases.values()].map((d) => d.resource),
    ),
  async create(request: CosmosRequest, { account, store }: Service): Promise<Reply> {
    const { resource, records } = account.createDatabase(await request.body());
    store.append(records);
    return ok(resource, 201);
  },
  read: (request: CosmosRequest, { account }: Service) => ok(account.database(id(request, DB)).resource),
  delete(request: CosmosRequest, { account, store }: Service): Reply {
    store.append(account.deleteDatabase(id(request, DB)));
    return { status: 204 };
  },
};

export const containers = {
  list(request: CosmosRequest, { account }: Service) {
    const database = account.database(id(request, DB));
    const resources = [...database.containers.values()].map((c) => c.resource);
    return listOrQuery(request, 'DocumentCollections', database.resource._rid, resources);
  },
  async create(request: CosmosRequest, { account, store }: Service): Promise<Reply> {
    const { resource, records } = account.createContainer(id(request, DB), await request.body());
    store.append(records);
    return ok(resource, 201);
  },
  read: (request: CosmosRequest, { account }: Service) =>
    ok(account.container(id(request, DB), id(request, COLL)).resource),
  async replace(request: CosmosRequest, { account, store }: Service): Promise<Reply> {
    const { resource, records } = account.replaceContainer(
      id(request, DB),
      id(request, COLL),
      await request.body(),
    );
    store.append(records);
    return ok(resource);
  },
  delete(request: CosmosRequest, { account, store }: Service): Reply {
    store.append(account.deleteContainer(id(request, DB), id(request, COLL)));
    return { status: 204 };
  },
  /** One partition key range covering the whole hash space: every document lives in range "0". */
  pkranges(request: CosmosRequest, { account }: Service): Reply {
    const { resource } = account.container(id(request, DB), id(request, COLL));
    const range = {
      _rid: resource._rid,
      id: '0',
      _etag: resource._etag,
      minInclusive: '',
      maxExclusive: 'FF',
      ridPrefix: 0,
      _self: `${resource._self}pkranges/${resource._rid}/`,
      throughputFraction: 1,
      status: 'online',
      parents: [],
      _ts: resource._ts,
    };
    return feed('PartitionKeyRanges', resource._rid, [range]);
  },
};

const PK_HEADER = 'x-ms-documentdb-partitionkey';

/** The request's partition key, normalised; undefined when absent (the SDK sends `[{}]` for "none"). */
export function partitionKey(request: CosmosRequest): string | undefined {
  const header = request.headers[PK_HEADER];
  if (header === undefined) return undefined;
  const pk = normalizePartitionKey(String(header));
  if (pk === undefined) throw errors.badRequest(`Partition key ${String(header)} is invalid.`);
  return pk;
}

export function requiredPartitionKey(request: CosmosRequest): string {
  const pk = partitionKey(request);
  if (pk === undefined) throw errors.badRequest('PartitionKey value must be supplied for this operation.');
  return pk;
}

/** Persists the container's writes, then answers: a client never sees a write that could still be lost. */
export function commit(target: Container, { store }: Service, reply: Reply): Reply {
  store.append(target.takeRecords());
  return reply;
}
