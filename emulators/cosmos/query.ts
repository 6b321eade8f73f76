import { createRequire } from 'node:module';
import { type Clauses, resolveCount, splitClauses } from './clauses.ts';
import { errors } from './errors.ts';
import { fold, type GroupPlan, planGroups } from './grouping.ts';
import { page, unique } from './results.ts';
import { checkIdentifiers } from './scope.ts';

type Engine = typeof import('@zeit/cosmosdb-query');
type Query = ReturnType<Engine['default']>;
let loaded: Engine | undefined;
/**
 * The SQL engine, loaded at the first query: with Babel and Turf it costs ~290 ms of CPU and ~35 MB,
 * most of the emulator's start, and point reads and writes never need it. A CommonJS module whose
 * default import differs between Node's ESM loader and vitest's: require it.
 */
const requireEngine = createRequire(import.meta.url);
const engine = () => {
  loaded ??= requireEngine('@zeit/cosmosdb-query') as Engine;
  return loaded;
};
export interface QuerySpec {
  query: string;
  parameters?: { name: string; value: unknown }[];
}

/**
 * A query ready to run: the engine's compiled core, the clauses it lacks, and for GROUP BY the
 * per-item projection the groups are folded from.
 */
interface Prepared {
  clauses: Clauses;
  query: Query;
  groups?: { plan: GroupPlan; query: Query; result: Query };
}

/** Prepared queries, reused: parsing and compiling costs far more than running on a small set. */
const compiled = new Map<string, Prepared>();
const CACHE_SIZE = 500;

function parse(text: string, reported = text): Query {
  let parsed: Query;
  try {
    parsed = engine().default(text);
  } catch (error) {
    throw syntaxError(reported, error);
  }
  checkFunctions(reported, parsed.ast);
  checkIdentifiers(reported, parsed.ast);
  return parsed;
}

function compile(text: string): Prepared {
  let prepared = compiled.get(text);
  if (!prepared) {
    const clauses = splitClauses(text);
    const query = parse(clauses.core, text);
    prepared = { clauses, query };
    if (clauses.groupBy.length) {
      const plan = planGroups(clauses.core, clauses.groupBy, query.ast);
      prepared.groups = { plan, query: parse(plan.projection), result: engine().default(plan.result) };
    }
    if (compiled.size >= CACHE_SIZE) compiled.delete(compiled.keys().next().value as string);
    compiled.set(text, prepared);
  }
  return prepared;
}

function syntaxError(text: string, error: unknown) {
  if (!(error instanceof engine().SyntaxError)) return errors.badRequest((error as Error).message);
  const { start, end } = (
    error as unknown as { location: { start: { offset: number }; end: { offset: number } } }
  ).location;
  const near = text.slice(start.offset).split(/\s/)[0] || text.slice(Math.max(0, start.offset - 1));
  return errors.sql({
    start: start.offset,
    end: Math.max(end.offset, start.offset + near.length),
    code: 'SC1001',
    message: `Syntax error, incorrect syntax near '${near}'.`,
  });
}

/** Azure Cosmos DB's built-in functions (the NoSQL query reference), upper-cased. */
const AZURE_FUNCTIONS = new Set(
  `ABS ACOS AGO ARRAY_CONCAT ARRAY_CONTAINS ARRAY_CONTAINS_ALL ARRAY_CONTAINS_ANY ARRAY_LENGTH ARRAY_SLICE
  ASIN ATAN ATN2 AVG CEILING CHOOSE CONCAT CONTAINS COS COT COUNT DATETIMEADD DATETIMEBIN DATETIMEDIFF
  DATETIMEFROMPARTS DATETIMEPART DATETIMETOTICKS DATETIMETOTIMESTAMP DEGREES DOCUMENTID ENDSWITH EXP
  FLOOR FULLTEXTCONTAINS FULLTEXTCONTAINSALL FULLTEXTCONTAINSANY FULLTEXTSCORE GETCURRENTDATETIME
  GETCURRENTDATETIMESTATIC GETCURRENTTICKS GETCURRENTTICKSSTATIC GETCURRENTTIMESTAMP
  GETCURRENTTIMESTAMPSTATIC IIF INDEX_OF INTADD INTBITAND INTBITLEFTSHIFT INTBITNOT INTBITOR
  INTBITRIGHTSHIFT INTBITXOR INTDIV INTMOD INTMUL INTSUB IS_ARRAY IS_BOOL IS_DEFINED IS_FINITE_NUMBER
  IS_INTEGER IS_NULL IS_NUMBER IS_OBJECT IS_PRIMITIVE IS_STRING LEFT LENGTH LOG LOG10 LOWER LTRIM MAX MIN
  NOW NUMBERBIN OBJECTTOARRAY PI POWER RADIANS RAND REGEXMATCH REPLACE REPLICATE REVERSE RIGHT ROUND RRF
  RTRIM SETINTERSECT SETUNION SIGN SIN SQRT SQUARE STARTSWITH STRINGEQUALS STRINGJOIN STRINGSPLIT
  STRINGTOARRAY STRINGTOBOOLEAN STRINGTONULL STRINGTONUMBER STRINGTOOBJECT ST_AREA ST_DISTANCE
  ST_INTERSECTS ST_ISVALID ST_ISVALIDDETAILED ST_WITHIN SUBSTRING SUM TAN TICKSTODATETIME
  TIMESTAMPTODATETIME TOSTRING TRIM TRUNC UPPER VECTORDISTANCE`.split(/\s+/),
);

/** Functions whose optional third argument (ignore case) the engine lacks. */
const CASE_ARGUMENT = new Set(['STARTSWITH', 'ENDSWITH', 'CONTAINS']);

/** Each function call in a parsed query: its name as written, whether it is `udf.<name>`, its arity. */
function* calls(node: unknown): Generator<{ name: string; udf: boolean; arity: number }> {
  if (Array.isArray(node)) for (const item of node) yield* calls(item);
  else if (node && typeof node === 'object') {
    const call = node as { type?: string; name?: { name?: string }; udf?: boolean; arguments?: unknown[] };
    if (call.type === 'scalar_function_expression' && call.name?.name)
      yield { name: call.name.name, udf: Boolean(call.udf), arity: call.arguments?.length ?? 0 };
    for (const value of Object.values(node)) yield* calls(value);
  }
}

/**
 * Refuses a call the engine cannot run, before it runs (the engine would fail with its own JavaScript
 * error, `$b.IIF is not a function`): a name Azure does not know gets Azure's SC2005; one of Azure's own
 * functions that this engine lacks, or a user-defined function, gets a refusal that says so.
 */
function checkFunctions(text: string, ast: unknown) {
  const { builtins, aggregates } = engineFunctions();
  for (const { name, udf, arity } of calls(ast)) {
    const upper = name.toUpperCase();
    const ignoreCase = CASE_ARGUMENT.has(upper) && arity === 3;
    if (!udf && !ignoreCase && (builtins.has(upper) || aggregates.has(upper))) continue;
    const written = udf ? `udf.${name}` : name;
    const start = new RegExp(`${written.replace('.', '\\.')}\\s*\\(`, 'i').exec(text)?.index ?? 0;
    const span = { start, end: start + written.length };
    if (ignoreCase)
      throw errors.sql({
        ...span,
        message: `The ignore-case argument of ${name} is not supported by this emulator.`,
      });
    if (udf)
      throw errors.sql({
        ...span,
        message: `User-defined functions (${written}) are not supported by this emulator.`,
      });
    if (AZURE_FUNCTIONS.has(upper))
      throw errors.sql({
        ...span,
        message: `The built-in function ${name} is not supported by this emulator.`,
      });
    throw errors.sql({
      ...span,
      code: 'SC2005',
      message: `'${name}' is not a recognized built-in function name.`,
    });
  }
}

let functions: { builtins: Set<string>; aggregates: Set<string> } | undefined;
/** The functions the engine implements, by upper-case name. */
const engineFunctions = () => {
  const load = (path: string) => new Set(Object.keys(requireEngine(path)));
  functions ??= {
    builtins: load('@zeit/cosmosdb-query/lib/builtin-functions.js'),
    aggregates: load('@zeit/cosmosdb-query/lib/aggregate-functions.js'),
  };
  return functions;
};

/** Checks a query request body. */
export function parseQuerySpec(body: unknown): QuerySpec {
  const spec = body as QuerySpec | null;
  if (!spec || typeof spec.query !== 'string') throw errors.invalidPayload();
  if (spec.parameters !== undefined && !Array.isArray(spec.parameters)) throw errors.invalidPayload();
  return spec;
}

interface CompositePath {
  path: string;
  order?: string;
}

/** `c.a.b` (or `c["a"].b`) as an index path, `/a/b`; undefined for anything else. */
function pathOf(expression: unknown): string | undefined {
  const node = expression as {
    type?: string;
    object?: unknown;
    property?: { name?: string; value?: unknown };
  };
  if (node.type === 'identifier') return '';
  if (node.type !== 'scalar_member_expression') return undefined;
  const parent = pathOf(node.object);
  const name = node.property?.name ?? node.property?.value;
  return parent === undefined || typeof name !== 'string' ? undefined : `${parent}/${name}`;
}

/**
 * An ORDER BY over several properties is served only by a composite index of the container's with the
 * same paths, in the same order, all its directions the same as the query's or all reversed; without
 * one, Cosmos DB refuses the query.
 */
export function checkOrderBy(spec: QuerySpec, policy: { compositeIndexes?: CompositePath[][] } | undefined) {
  const orderBy = (
    compile(spec.query).query.ast.body as {
      orderBy?: { expressions: { expression: unknown; order?: string }[] } | null;
    }
  ).orderBy?.expressions;
  if (!orderBy || orderBy.length < 2) return;
  const wanted = orderBy.map(({ expression, order }) => ({
    path: pathOf(expression),
    descending: order?.toUpperCase() === 'DESC',
  }));
  const serves = (index: CompositePath[]) => {
    if (index.length !== wanted.length) return false;
    const same = index.map((entry, i) => (entry.order === 'descending') === wanted[i]?.descending);
    return (
      index.every((entry, i) => entry.path === wanted[i]?.path) &&
      (same.every(Boolean) || same.every((s) => !s))
    );
  };
  if (!(policy?.compositeIndexes ?? []).some(serves))
    throw errors.badRequest(
      `Message: ${JSON.stringify({ Errors: ['The order by query does not have a corresponding composite index that it can be served from.'] })}`,
    );
}

function execute(query: Query, items: object[], options: Parameters<Query['exec']>[1]) {
  try {
    return query.exec(items, options) as { result: unknown[]; continuation: unknown };
  } catch (error) {
    throw errors.badRequest((error as Error).message);
  }
}

/** Runs a query over `items`, one page of at most `maxItemCount` results from `continuation` on. */
export function runQuery(items: object[], spec: QuerySpec, maxItemCount: number, continuation?: string) {
  const prepared = compile(spec.query);
  let token: { token?: string; skip?: number } | undefined;
  if (continuation) {
    try {
      token = JSON.parse(continuation);
    } catch {
      throw errors.badRequest('Invalid Continuation Token');
    }
  }
  // A core that differs from the text had clauses cut out: those need the whole answer, paged here.
  if (prepared.clauses.core !== spec.query) return page(shaped(prepared, items, spec), maxItemCount, token);
  const { result, continuation: next } = execute(prepared.query, items, {
    parameters: spec.parameters,
    maxItemCount,
    continuation: token as { token: string } | undefined,
  });
  return { result, continuation: next ? JSON.stringify(next) : undefined };
}

/**
 * All the results of a query with the clauses the engine lacks, in Cosmos DB's order of evaluation:
 * GROUP BY, DISTINCT, OFFSET … LIMIT, TOP. One partition key range: the whole answer is the gateway's.
 */
function shaped({ clauses, query, groups }: Prepared, items: object[], { parameters }: QuerySpec) {
  let results = groups
    ? fold(
        groups.plan,
        execute(groups.query, items, { parameters }).result as Record<string, unknown>[],
        requireEngine('@zeit/cosmosdb-query/lib/aggregate-functions.js'),
        (row, folded) =>
          execute(groups.result, [row as object], { parameters: [...(parameters ?? []), ...folded] }).result,
      )
    : execute(query, items, { parameters }).result;
  if (clauses.distinct) results = unique(results);
  if (clauses.offset && clauses.limit) {
    const offset = resolveCount(clauses.offset, parameters);
    results = results.slice(offset, offset + resolveCount(clauses.limit, parameters));
  }
  if (clauses.top) results = results.slice(0, resolveCount(clauses.top, parameters));
  return results;
}

/** True when the document satisfies a patch condition (`FROM c WHERE ...`). */
export function matchesCondition(item: object, condition: string): boolean {
  return runQuery([item], { query: `SELECT VALUE 1 ${condition}` }, 0).result.length > 0;
}

/**
 * The plan the SDK asks for before a cross-partition query, and follows when told to
 * (`forceQueryPlan`). This account has one partition key range, which the gateway answers whole, so
 * the plan lists no clause whose per-range answers the SDK would merge (ORDER BY, aggregates,
 * DISTINCT, GROUP BY, OFFSET … LIMIT): it sends the query as written and hands the answer on as it is.
 * TOP is listed: the SDK's TOP over the whole answer takes it unchanged.
 */
export function queryPlan(spec: QuerySpec) {
  const body = compile(spec.query).query.ast.body as {
    top?: { value: { value?: number } } | null;
    select: { value?: unknown };
  };
  return {
    partitionedQueryExecutionInfoVersion: 2,
    queryInfo: {
      distinctType: 'None',
      top: body.top?.value.value ?? null,
      offset: null,
      limit: null,
      orderBy: [],
      orderByExpressions: [],
      groupByExpressions: [],
      groupByAliases: [],
      aggregates: [],
      groupByAliasToAggregateType: {},
      rewrittenQuery: '',
      hasSelectValue: body.select.value !== undefined,
      dCountInfo: null,
      hasNonStreamingOrderBy: false,
    },
    queryRanges: [{ min: '', max: 'FF', isMinInclusive: true, isMaxInclusive: false }],
  };
}
