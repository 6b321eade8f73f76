import { isQuery, isTrue } from './auth.ts';
import type { Container } from './container.ts';
import { CosmosError, errors } from './errors.ts';
import type { Item } from './model.ts';
import { normalizePartitionKey } from './model.ts';
import { applyPatch, parsePatch } from './patch.ts';
import { matchesCondition, parseQuerySpec, queryPlan, runQuery } from './query.ts';
import {
  COLL,
  type CosmosRequest,
  DB,
  DOC,
  feed,
  id,
  pageSize,
  type Reply,
  type Service,
} from './resources.ts';

const PK_HEADER = 'x-ms-documentdb-partitionkey';

/** The request's partition key, normalised; undefined when absent (the SDK sends `[{}]` for "none"). */
function partitionKey(request: CosmosRequest): string | undefined {
  const header = request.headers[PK_HEADER];
  if (header === undefined) return undefined;
  const pk = normalizePartitionKey(String(header));
  if (pk === undefined) throw errors.badRequest(`Partition key ${String(header)} is invalid.`);
  return pk;
}

function requiredPartitionKey(request: CosmosRequest): string {
  const pk = partitionKey(request);
  if (pk === undefined) throw errors.badRequest('PartitionKey value must be supplied for this operation.');
  return pk;
}

const header = (request: CosmosRequest, name: string) => request.headers[name] as string | undefined;
const container = (request: CosmosRequest, { account }: Service) =>
  account.container(id(request, DB), id(request, COLL));
const itemReply = (item: Item, status: number): Reply => ({
  status,
  body: item,
  headers: { etag: item._etag },
});

/** Persists the container's writes, then answers: a client never sees a write that could still be lost. */
async function commit(target: Container, { store }: Service, reply: Reply): Promise<Reply> {
  await store.append(target.takeRecords());
  return reply;
}

/** POST on a container's docs: create, upsert, query, query plan or transactional batch, told apart by headers. */
export async function postDocuments(request: CosmosRequest, service: Service): Promise<Reply> {
  const target = container(request, service);
  const { headers } = request;
  if (isTrue(headers['x-ms-cosmos-is-query-plan-request']))
    return { status: 200, body: queryPlan(parseQuerySpec(await request.body())) };
  if (isQuery(headers)) {
    if (headers['content-type'] !== 'application/query+json') throw errors.unsupportedMediaType();
    const spec = parseQuerySpec(await request.body());
    const page = runQuery(
      target.items(partitionKey(request)),
      spec,
      pageSize(headers),
      header(request, 'x-ms-continuation'),
    );
    return feed('Documents', target.resource._rid, page.result, page.continuation);
  }
  if (isTrue(headers['x-ms-cosmos-is-batch-request'])) return batch(request, service, target);
  const mode = isTrue(headers['x-ms-documentdb-is-upsert']) ? 'upsert' : 'create';
  const body = await request.body();
  const { status, item } = target.write(mode, body, partitionKey(request), {
    ifMatch: header(request, 'if-match'),
  });
  return commit(target, service, itemReply(item, status));
}

/** GET on a container's docs: the change feed when `A-IM` asks for it, otherwise the plain feed (readAll). */
export function readDocuments(request: CosmosRequest, service: Service): Reply {
  const target = container(request, service);
  const pk = partitionKey(request);
  if (!request.headers['a-im']) {
    const page = runQuery(
      target.items(pk),
      { query: 'SELECT * FROM root' },
      pageSize(request.headers),
      header(request, 'x-ms-continuation'),
    );
    return feed('Documents', target.resource._rid, page.result, page.continuation);
  }
  // The continuation is the last LSN seen ("*" = from now); If-Modified-Since starts at a time instead.
  const ifNoneMatch = header(request, 'if-none-match');
  const since = ifNoneMatch === '*' ? target.lsn : Number(ifNoneMatch?.replaceAll('"', '') ?? 0);
  if (!Number.isInteger(since) || since < 0)
    throw errors.badRequest('Invalid continuation token for change feed.');
  const modifiedSince = header(request, 'if-modified-since');
  const sinceMs = modifiedSince === undefined ? undefined : Date.parse(modifiedSince);
  if (sinceMs !== undefined && Number.isNaN(sinceMs))
    throw errors.badRequest('Invalid If-Modified-Since header.');
  const sinceTs = sinceMs === undefined ? undefined : Math.floor(sinceMs / 1000);
  const changes = target.changes(since, pk, sinceTs, pageSize(request.headers));
  const last = changes.at(-1)?._lsn ?? target.lsn;
  if (changes.length === 0) return { status: 304, headers: { etag: `"${Math.max(last, since)}"` } };
  const reply = feed('Documents', target.resource._rid, changes);
  return { ...reply, headers: { ...reply.headers, etag: `"${last}"` } };
}

export const document = {
  read(request: CosmosRequest, service: Service): Reply {
    const item = container(request, service).read(requiredPartitionKey(request), id(request, DOC));
    if (!item) throw errors.itemNotFound();
    if (header(request, 'if-none-match') === item._etag)
      return { status: 304, headers: { etag: item._etag } };
    return itemReply(item, 200);
  },
  async replace(request: CosmosRequest, service: Service): Promise<Reply> {
    const target = container(request, service);
    const body = await request.body();
    const options = { ifMatch: header(request, 'if-match'), urlId: id(request, DOC) };
    const { item } = target.write('replace', body, requiredPartitionKey(request), options);
    return commit(target, service, itemReply(item, 200));
  },
  async delete(request: CosmosRequest, service: Service): Promise<Reply> {
    const target = container(request, service);
    target.delete(requiredPartitionKey(request), id(request, DOC), header(request, 'if-match'));
    return commit(target, service, { status: 204 });
  },
  async patch(request: CosmosRequest, service: Service): Promise<Reply> {
    const target = container(request, service);
    const body = await request.body();
    const item = patchItem(
      target,
      requiredPartitionKey(request),
      id(request, DOC),
      body,
      header(request, 'if-match'),
    );
    return commit(target, service, itemReply(item, 200));
  },
};

function patchItem(target: Container, pk: string, itemId: string, body: unknown, ifMatch?: string): Item {
  const { operations, condition } = parsePatch(body);
  const current = target.read(pk, itemId);
  if (!current) throw errors.itemNotFound();
  if (condition !== undefined && !matchesCondition(current, condition)) throw errors.preconditionFailed();
  return target.write('replace', applyPatch(current, operations), pk, { ifMatch, urlId: itemId }).item;
}

interface BatchOperation {
  operationType?: string;
  id?: string;
  partitionKey?: string;
  resourceBody?: unknown;
  ifMatch?: string;
}

const MAX_BATCH = 100;

/** A transactional batch: all operations apply, or none does and the first failure is reported (207). */
async function batch(request: CosmosRequest, service: Service, target: Container): Promise<Reply> {
  const operations = await request.body();
  if (!Array.isArray(operations)) throw errors.invalidPayload();
  if (operations.length === 0 || operations.length > MAX_BATCH) {
    throw errors.badRequest(
      `Batch request has more operations than what is supported (${MAX_BATCH}) or none.`,
    );
  }
  const batchPk = partitionKey(request);
  const results: Record<string, unknown>[] = [];
  try {
    target.transaction(() => {
      for (const [index, operation] of (operations as BatchOperation[]).entries()) {
        try {
          results.push(runOperation(target, operation ?? {}, batchPk));
        } catch (error) {
          if (!(error instanceof CosmosError)) throw error;
          throw new BatchFailure(index, error);
        }
      }
    });
  } catch (error) {
    if (!(error instanceof BatchFailure)) throw error;
    const failed = operations.map((_, index) =>
      index === error.index
        ? { statusCode: error.cause.status, requestCharge: 1 }
        : { statusCode: 424, requestCharge: 0 },
    );
    return { status: 207, body: failed };
  }
  return commit(target, service, { status: 200, body: results });
}

class BatchFailure extends Error {
  constructor(
    readonly index: number,
    override readonly cause: CosmosError,
  ) {
    super(cause.message);
  }
}

function runOperation(target: Container, operation: BatchOperation, batchPk: string | undefined) {
  const pk = operation.partitionKey === undefined ? batchPk : normalizePartitionKey(operation.partitionKey);
  if (pk === undefined) throw errors.badRequest('PartitionKey value must be supplied for this operation.');
  const done = (statusCode: number, item?: Item) => ({
    statusCode,
    requestCharge: 1,
    eTag: item?._etag,
    resourceBody: item,
  });
  const itemId = String(operation.id ?? '');
  switch (operation.operationType) {
    case 'Create':
    case 'Upsert':
    case 'Replace': {
      const mode = operation.operationType.toLowerCase() as 'create' | 'upsert' | 'replace';
      const urlId = mode === 'replace' ? itemId : undefined;
      const { status, item } = target.write(mode, operation.resourceBody, pk, {
        ifMatch: operation.ifMatch,
        urlId,
      });
      return done(status, item);
    }
    case 'Read': {
      const item = target.read(pk, itemId);
      if (!item) throw errors.itemNotFound();
      return done(200, item);
    }
    case 'Delete':
      target.delete(pk, itemId, operation.ifMatch);
      return done(204);
    case 'Patch':
      return done(200, patchItem(target, pk, itemId, operation.resourceBody, operation.ifMatch));
    default:
      throw errors.badRequest(
        `Operation type '${String(operation.operationType)}' is not supported in Batch.`,
      );
  }
}
