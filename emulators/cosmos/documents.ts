import { isQuery, isTrue } from './auth.ts';
import { batch } from './batch.ts';
import { errors } from './errors.ts';
import type { Item } from './model.ts';
import { patchItem } from './patch.ts';
import { checkOrderBy, parseQuerySpec, queryPlan, runQuery } from './query.ts';
import {
  COLL,
  type CosmosRequest,
  commit,
  DB,
  DOC,
  feed,
  id,
  pageSize,
  partitionKey,
  type Reply,
  requiredPartitionKey,
  type Service,
} from './resources.ts';

const header = (request: CosmosRequest, name: string) => request.headers[name] as string | undefined;
const container = (request: CosmosRequest, { account }: Service) =>
  account.container(id(request, DB), id(request, COLL));
const itemReply = (item: Item, status: number): Reply => ({
  status,
  body: item,
  headers: { etag: item._etag },
});

/** POST on a container's docs: create, upsert, query, query plan or transactional batch, told apart by headers. */
export async function postDocuments(request: CosmosRequest, service: Service): Promise<Reply> {
  const target = container(request, service);
  const { headers } = request;
  const { indexingPolicy } = target.resource as { indexingPolicy?: Parameters<typeof checkOrderBy>[1] };
  if (isTrue(headers['x-ms-cosmos-is-query-plan-request'])) {
    const spec = parseQuerySpec(await request.body());
    checkOrderBy(spec, indexingPolicy);
    return { status: 200, body: queryPlan(spec) };
  }
  if (isQuery(headers)) {
    if (headers['content-type'] !== 'application/query+json') throw errors.unsupportedMediaType();
    const spec = parseQuerySpec(await request.body());
    checkOrderBy(spec, indexingPolicy);
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
  delete(request: CosmosRequest, service: Service): Reply {
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
