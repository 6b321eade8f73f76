import { createRequire } from 'node:module';
import { errors } from './errors.ts';

type Engine = typeof import('@zeit/cosmosdb-query');
type Query = ReturnType<Engine['default']>;
let loaded: Engine | undefined;
/**
 * The SQL engine, loaded at the first query: with Babel and Turf it costs ~290 ms of CPU and ~35 MB,
 * most of the emulator's start, and point reads and writes never need it. A CommonJS module whose
 * default import differs between Node's ESM loader and vitest's: require it.
 */
const engine = () => {
  loaded ??= createRequire(import.meta.url)('@zeit/cosmosdb-query') as Engine;
  return loaded;
};
export interface QuerySpec {
  query: string;
  parameters?: { name: string; value: unknown }[];
}

/** Parsed queries, reused: parsing and compiling costs far more than running on a small set. */
const compiled = new Map<string, Query>();
const CACHE_SIZE = 500;

function compile(text: string): Query {
  let parsed = compiled.get(text);
  if (!parsed) {
    try {
      parsed = engine().default(text);
    } catch (error) {
      throw syntaxError(text, error);
    }
    if (compiled.size >= CACHE_SIZE) compiled.delete(compiled.keys().next().value as string);
    compiled.set(text, parsed);
  }
  return parsed;
}

/** Cosmos reports SQL errors as a JSON list inside the message, with the offending span. */
function syntaxError(text: string, error: unknown) {
  if (!(error instanceof engine().SyntaxError)) return errors.badRequest((error as Error).message);
  const { start, end } = (
    error as unknown as { location: { start: { offset: number }; end: { offset: number } } }
  ).location;
  const near = text.slice(start.offset).split(/\s/)[0] || text.slice(Math.max(0, start.offset - 1));
  const detail = {
    errors: [
      {
        severity: 'Error',
        location: { start: start.offset, end: Math.max(end.offset, start.offset + near.length) },
        code: 'SC1001',
        message: `Syntax error, incorrect syntax near '${near}'.`,
      },
    ],
  };
  return errors.badRequest(`Message: ${JSON.stringify(detail)}`);
}

/** Checks a query request body. */
export function parseQuerySpec(body: unknown): QuerySpec {
  const spec = body as QuerySpec | null;
  if (!spec || typeof spec.query !== 'string') throw errors.invalidPayload();
  if (spec.parameters !== undefined && !Array.isArray(spec.parameters)) throw errors.invalidPayload();
  return spec;
}

/** Runs a query over `items`, one page of at most `maxItemCount` results from `continuation` on. */
export function runQuery(items: object[], spec: QuerySpec, maxItemCount: number, continuation?: string) {
  const parsed = compile(spec.query);
  let token: { token: string } | undefined;
  if (continuation) {
    try {
      token = JSON.parse(continuation);
    } catch {
      throw errors.badRequest('Invalid Continuation Token');
    }
  }
  try {
    const { result, continuation: next } = parsed.exec(items, {
      parameters: spec.parameters,
      maxItemCount,
      continuation: token,
    }) as { result: unknown[]; continuation: unknown };
    return { result, continuation: next ? JSON.stringify(next) : undefined };
  } catch (error) {
    throw errors.badRequest((error as Error).message);
  }
}

/** True when the document satisfies a patch condition (`FROM c WHERE ...`). */
export function matchesCondition(item: object, condition: string): boolean {
  return runQuery([item], { query: `SELECT VALUE 1 ${condition}` }, 0).result.length > 0;
}

const AGGREGATES = new Set(['AVG', 'COUNT', 'MAX', 'MIN', 'SUM']);

/**
 * The plan the SDK asks for before a cross-partition query. This account has one partition key range,
 * so the gateway answers every query whole and the SDK never needs to merge; the plan still describes
 * the query truthfully (TOP, ORDER BY, aggregates) over the one full range.
 */
export function queryPlan(spec: QuerySpec) {
  const { ast } = compile(spec.query);
  const body = ast.body as {
    top?: { value: { value?: number } } | null;
    select: { value?: { type: string; name?: { name: string } } };
    orderBy?: { expressions: { expression: unknown; order?: string }[] } | null;
  };
  const value = body.select.value;
  const aggregate =
    value?.type === 'scalar_function_expression' &&
    value.name &&
    AGGREGATES.has(value.name.name.toUpperCase())
      ? value.name.name
      : undefined;
  const orderBy = body.orderBy?.expressions ?? [];
  return {
    partitionedQueryExecutionInfoVersion: 2,
    queryInfo: {
      distinctType: 'None',
      top: body.top?.value.value ?? null,
      offset: null,
      limit: null,
      orderBy: orderBy.map((item) => (item.order?.toUpperCase() === 'DESC' ? 'Descending' : 'Ascending')),
      orderByExpressions: [],
      groupByExpressions: [],
      groupByAliases: [],
      aggregates: aggregate ? [aggregate.charAt(0).toUpperCase() + aggregate.slice(1).toLowerCase()] : [],
      groupByAliasToAggregateType: {},
      rewrittenQuery: '',
      hasSelectValue: value !== undefined,
      dCountInfo: null,
      hasNonStreamingOrderBy: false,
    },
    queryRanges: [{ min: '', max: 'FF', isMinInclusive: true, isMaxInclusive: false }],
  };
}
