import { type Span, selectList, unsupported } from './clauses.ts';
import { errors, type SqlError } from './errors.ts';

/** How a GROUP BY query is answered: each item projected once by the engine, then folded per group. */
export interface GroupPlan {
  /** `SELECT VALUE {"g0": …, "v0": …} FROM …`: the group keys and each select item's input, per item. */
  projection: string;
  /** How many GROUP BY expressions (`g0`…). */
  keys: number;
  value: boolean;
  columns: Column[];
}

interface Column {
  alias: string;
  /** The aggregate (upper case) folding the column's inputs, or none: the group's first value. */
  aggregate?: string;
}

const AGGREGATE = /^(COUNT|SUM|AVG|MIN|MAX)\s*\(([\s\S]*)\)$/i;
const HAS_AGGREGATE = /\b(COUNT|SUM|AVG|MIN|MAX)\s*\(/i;
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

/**
 * Plans a GROUP BY query over the engine: refuses what Cosmos DB refuses (a property in the select
 * list that is neither grouped nor aggregated: SC2102), and what this emulator cannot fold.
 */
export function planGroups(core: string, groupBy: Span[]): GroupPlan {
  const { items, value, from } = selectList(core);
  const unnamed = { count: 0 };
  const inputs: string[] = [];
  const invalid: SqlError[] = [];
  const columns = items.map((item) => {
    if (item.text === '*') throw unsupported(item, "'SELECT *' with GROUP BY");
    const { expression, alias } = splitAlias(item.text);
    const name = value ? '' : (alias ?? defaultAlias(expression, unnamed));
    const aggregate = AGGREGATE.exec(expression);
    if (aggregate && balanced(aggregate[2] ?? '')) {
      inputs.push(aggregate[2] ?? '');
      return { alias: name, aggregate: aggregate[1]?.toUpperCase() };
    }
    if (HAS_AGGREGATE.test(expression)) throw unsupported(item, 'An aggregate inside another expression');
    invalid.push(...ungrouped(item, expression, groupBy));
    inputs.push(expression);
    return { alias: name };
  });
  for (const key of groupBy)
    if (HAS_AGGREGATE.test(key.text)) throw unsupported(key, 'An aggregate in GROUP BY');
  if (invalid.length) throw errors.sql(...invalid);
  const rest = core.slice(from);
  const fields = [
    ...groupBy.map((key, i) => `"g${i}": ${key.text}`),
    ...inputs.map((input, i) => `"v${i}": ${input}`),
  ];
  return {
    projection: `SELECT VALUE {${fields.join(', ')}} ${rest}`,
    keys: groupBy.length,
    value,
    columns,
  };
}

/** True when every parenthesis in `text` closes: `COUNT(a) + MAX(b)` is not one call. */
function balanced(text: string) {
  let depth = 0;
  for (const char of text.replace(/"[^"]*"|'[^']*'/g, '')) {
    depth += char === '(' ? 1 : char === ')' ? -1 : 0;
    if (depth < 0) return false;
  }
  return depth === 0;
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

type Aggregates = Record<string, (values: unknown[]) => unknown>;

/** Folds the projected rows into one result per group, in the order groups first appear. */
export function fold(plan: GroupPlan, rows: Record<string, unknown>[], aggregates: Aggregates): unknown[] {
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
  const results: unknown[] = [];
  for (const members of groups.values()) {
    const cells = plan.columns.map(({ alias, aggregate }, i) => {
      const values = members.map((row) => row[`v${i}`]);
      return [alias, aggregate ? aggregates[aggregate]?.(values) : values[0]] as const;
    });
    if (plan.value) {
      if (cells[0]?.[1] !== undefined) results.push(cells[0][1]);
    } else results.push(Object.fromEntries(cells.filter(([, cell]) => cell !== undefined)));
  }
  return results;
}
