import { type Span, selectList, unsupported } from './clauses.ts';
import { errors, type SqlError } from './errors.ts';

/**
 * How a GROUP BY query is answered: each row projected once by the engine (its group keys, the inputs
 * of every aggregate, and its aliases' values), the aggregates folded per group, then the select list
 * evaluated once per group on its first row's aliases, each aggregate read from a parameter.
 */
export interface GroupPlan {
  /** `SELECT VALUE {"g0": …, "a0": …, "s": {"c": [c], …}} FROM …`, per row. */
  projection: string;
  /** `SELECT VALUE {"k0": …} FROM __row JOIN c IN __row.s["c"] …`, per group, aggregates as `@__a0`… */
  result: string;
  /** How many GROUP BY expressions (`g0`…). */
  keys: number;
  /** The aggregate (upper case) folding each `a` input. */
  aggregates: string[];
  /** Each select item's output name (`k0`… renamed), or none for SELECT VALUE. */
  names?: string[];
}

const HAS_AGGREGATE = /\b(COUNT|SUM|AVG|MIN|MAX)\s*\(/gi;
/** A property reference: a name with at least one `.name` or `[…]` after it. */
const REFERENCE = /[A-Za-z_$][\w$]*(\s*(\.\s*[A-Za-z_$][\w$]*|\[\s*("[^"]*"|'[^']*'|\d+)\s*\]))+/g;
const PATH_END = /(?:\.\s*([A-Za-z_$][\w$]*)|\[\s*["']([^"']*)["']\s*\])$/;
const OPERATORS = new Set(['AND', 'OR', 'NOT', 'IN', 'BETWEEN', 'LIKE', 'IS', 'ESCAPE']);
/** `expr AS alias`, `expr alias` or `expr`. */
function splitAlias(item: string): { expression: string; alias?: string } {
  const match = /^([\s\S]*?)(?:\s+AS)?\s+([A-Za-z_$][\w$]*)$/i.exec(item);
  const before = match?.[1]?.trimEnd() ?? '';
  const last = before.split(/\s+/).at(-1)?.toUpperCase() ?? '';
  if (!match || before === '' || /[.+\-*/%|&^<>=!?:,]$/.test(before) || OPERATORS.has(last))
    return { expression: item };
  return { expression: before, alias: match[2] };
}

/** The name Cosmos DB gives an unaliased select item: a path's last property, else `$1`, `$2`… */
function defaultAlias(expression: string, unnamed: { count: number }) {
  const path = PATH_END.exec(expression);
  if (path && new RegExp(`^${REFERENCE.source}$`).test(expression)) return path[1] ?? path[2] ?? '';
  unnamed.count += 1;
  return `$${unnamed.count}`;
}

const STRING = /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g;

/** Blanks string literals, keeping every other character where it was. */
const blankStrings = (text: string) => text.replace(STRING, (m) => ' '.repeat(m.length));

interface Call {
  name: string;
  argument: string;
  start: number;
  end: number;
}

/** The aggregate calls in a select item, outermost only, with where each starts and ends. */
function aggregateCalls(text: string): Call[] {
  const plain = blankStrings(text);
  const calls: Call[] = [];
  for (const match of plain.matchAll(HAS_AGGREGATE)) {
    if (calls.some((call) => match.index < call.end)) continue;
    const open = match.index + match[0].length;
    let depth = 1;
    let end = open;
    for (; end < plain.length && depth > 0; end += 1)
      depth += plain[end] === '(' ? 1 : plain[end] === ')' ? -1 : 0;
    const name = (match[1] ?? '').toUpperCase();
    calls.push({ name, argument: text.slice(open, end - 1), start: match.index, end });
  }
  return calls;
}

/** The names a query's FROM and JOINs bind, whose values a group's select list is evaluated on. */
function aliases(ast: unknown): string[] {
  type Source = {
    alias?: { name: string } | null;
    expression: { type: string; expression?: { name?: string } };
  };
  const from = (ast as { body: { from?: { source: Source; joins: Source[] } | null } }).body.from;
  return (from ? [from.source, ...from.joins] : []).flatMap(({ alias, expression }) => {
    const container = expression.type === 'collection_expression' ? expression.expression?.name : undefined;
    const name = alias?.name ?? container;
    return name ? [name] : [];
  });
}

/**
 * Plans a GROUP BY query over the engine: refuses what Cosmos DB refuses (a property in the select
 * list that is neither grouped nor aggregated: SC2102), and what this emulator cannot fold.
 */
export function planGroups(core: string, groupBy: Span[], ast: unknown): GroupPlan {
  const { items, value, from } = selectList(core);
  const unnamed = { count: 0 };
  const inputs: string[] = [];
  const aggregates: string[] = [];
  const invalid: SqlError[] = [];
  const outputs = items.map((item) => {
    if (item.text === '*') throw unsupported(item, "'SELECT *' with GROUP BY");
    if (/\bSELECT\b/i.test(blankStrings(item.text)))
      throw unsupported(item, 'A subquery in the select list of GROUP BY');
    const { expression, alias } = splitAlias(item.text);
    let evaluated = '';
    let blanked = '';
    let last = 0;
    for (const call of aggregateCalls(expression)) {
      if (aggregateCalls(call.argument).length) throw unsupported(item, 'An aggregate of an aggregate');
      evaluated += `${expression.slice(last, call.start)}@__a${aggregates.length}`;
      blanked += expression.slice(last, call.start) + ' '.repeat(call.end - call.start);
      aggregates.push(call.name);
      inputs.push(call.argument);
      last = call.end;
    }
    evaluated += expression.slice(last);
    blanked += expression.slice(last);
    invalid.push(...ungrouped(item, blanked, groupBy));
    return { name: value ? '' : (alias ?? defaultAlias(expression, unnamed)), evaluated };
  });
  for (const key of groupBy)
    if (aggregateCalls(key.text).length) throw unsupported(key, 'An aggregate in GROUP BY');
  if (invalid.length) throw errors.sql(...invalid);
  const names = aliases(ast);
  const fields = [
    ...groupBy.map((key, i) => `"g${i}": ${key.text}`),
    ...inputs.map((input, i) => `"a${i}": ${input}`),
    `"s": {${names.map((name) => `"${name}": [${name}]`).join(', ')}}`,
  ];
  const select = value
    ? outputs[0]?.evaluated
    : `{${outputs.map((output, i) => `"k${i}": ${output.evaluated}`).join(', ')}}`;
  const joins = names.map((name) => `JOIN ${name} IN __row.s["${name}"]`).join(' ');
  return {
    projection: `SELECT VALUE {${fields.join(', ')}} ${core.slice(from)}`,
    result: `SELECT VALUE ${select} FROM __row ${joins}`,
    keys: groupBy.length,
    aggregates,
    names: value ? undefined : outputs.map((output) => output.name),
  };
}

/** A property reference written one way: `c["a"] . b` is `c.a.b`. */
const path = (reference: string) =>
  reference.replace(/\s+/g, '').replace(/\[(["'])([A-Za-z_$][\w$]*)\1\]/g, '.$2');

/** The property references of a select item that no GROUP BY expression covers. */
function ungrouped(item: Span, expression: string, groupBy: Span[]) {
  let masked = expression;
  for (const key of groupBy) masked = masked.split(key.text).join(' '.repeat(key.text.length));
  const literals = [...masked.matchAll(STRING)].map((m) => [m.index, m.index + m[0].length]);
  const inLiteral = (at: number) => literals.some(([start = 0, end = 0]) => at > start && at < end);
  const grouped = new Set(groupBy.map((key) => path(key.text)));
  const references = [...masked.matchAll(REFERENCE)].filter(
    (m) => !inLiteral(m.index) && !grouped.has(path(m[0])),
  );
  return references.map((reference) => {
    const start = item.start + (reference.index ?? 0);
    return {
      start,
      end: start + reference[0].length,
      code: 'SC2102',
      message: `Property reference '${reference[0]}' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause.`,
    };
  });
}

type Fold = (values: unknown[]) => unknown;
type Evaluate = (row: unknown, parameters: { name: string; value: unknown }[]) => unknown[];

/** Folds the projected rows into one result per group, in the order groups first appear. */
export function fold(
  plan: GroupPlan,
  rows: Record<string, unknown>[],
  folds: Record<string, Fold>,
  evaluate: Evaluate,
): unknown[] {
  const groups = new Map<string, Record<string, unknown>[]>();
  for (const row of rows) {
    // Undefined is a group of its own, apart from null (JSON would make both null).
    const key = JSON.stringify(
      Array.from({ length: plan.keys }, (_, i) => (row[`g${i}`] === undefined ? [] : [row[`g${i}`]])),
    );
    const members = groups.get(key);
    if (members) members.push(row);
    else groups.set(key, [row]);
  }
  const { names } = plan;
  return [...groups.values()].flatMap((members) => {
    const parameters = plan.aggregates.map((aggregate, i) => ({
      name: `@__a${i}`,
      value: folds[aggregate]?.(members.map((row) => row[`a${i}`])),
    }));
    const results = evaluate(members[0], parameters);
    if (!names) return results;
    // Cosmos DB's output names, which need not be identifiers (`$1`): the engine gave `k0`, `k1`…
    return results.map((result) =>
      Object.fromEntries(
        Object.entries(result as object).map(([key, cell]) => [names[Number(key.slice(1))], cell]),
      ),
    );
  });
}
