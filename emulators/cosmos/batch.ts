import { isTrue } from './auth.ts';
import type { Container } from './container.ts';
import { CosmosError, errors } from './errors.ts';
import { type Item, normalizePartitionKey } from './model.ts';
import { patchItem } from './patch.ts';
import { type CosmosRequest, commit, partitionKey, type Reply, type Service } from './resources.ts';

interface BatchOperation {
  operationType?: string;
  id?: string;
  partitionKey?: string;
  resourceBody?: unknown;
  ifMatch?: string;
}

const MAX_BATCH = 100;

/**
 * A batch request: a transactional batch (all operations apply, or none does and the first failure is
 * reported, 207), or, when the SDK sends `x-ms-cosmos-batch-atomic: false` (bulk), operations that each
 * stand alone.
 */
export async function batch(request: CosmosRequest, service: Service, target: Container): Promise<Reply> {
  const operations = await request.body();
  if (!Array.isArray(operations)) throw errors.invalidPayload();
  if (operations.length === 0 || operations.length > MAX_BATCH) {
    throw errors.badRequest(
      `Batch request has more operations than what is supported (${MAX_BATCH}) or none.`,
    );
  }
  const batchPk = partitionKey(request);
  const { headers } = request;
  if (String(headers['x-ms-cosmos-batch-atomic']).toLowerCase() === 'false') {
    const continueOnError = isTrue(headers['x-ms-cosmos-batch-continue-on-error']);
    return commit(target, service, bulk(target, operations, batchPk, continueOnError));
  }
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
      index === error.index ? failure(error.cause) : FAILED_DEPENDENCY,
    );
    return { status: 207, body: failed };
  }
  return commit(target, service, { status: 200, body: results });
}

const FAILED_DEPENDENCY = { statusCode: 424, requestCharge: 0 };
const failure = (error: CosmosError) => ({ statusCode: error.status, requestCharge: 1 });

/**
 * Bulk: each operation applies or fails on its own, in order; a failure undoes none of the others. Without
 * continue-on-error the rest are not attempted (424). 207 when any failed, as for a batch.
 */
function bulk(
  target: Container,
  operations: BatchOperation[],
  batchPk: string | undefined,
  continueOnError: boolean,
): Reply {
  let failed = false;
  const results = operations.map((operation) => {
    if (failed && !continueOnError) return FAILED_DEPENDENCY;
    try {
      return target.transaction(() => runOperation(target, operation ?? {}, batchPk));
    } catch (error) {
      if (!(error instanceof CosmosError)) throw error;
      failed = true;
      return failure(error);
    }
  });
  return { status: failed ? 207 : 200, body: results };
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
