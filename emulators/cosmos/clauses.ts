import { errors } from './errors.ts';

/**
 * The clauses the SQL engine (`@zeit/cosmosdb-query`) has no grammar for — DISTINCT, GROUP BY and
 * OFFSET … LIMIT — cut out of the query text at its top level, so the engine runs the rest and
 * `query.ts` applies them to its results.
 */
export interface Clauses {
  /** The query without the cut clauses, for the engine. */
  core: string;
  distinct: boolean;
  /** The GROUP BY expressions as written, with where each starts in the original text. */
  groupBy: Span[];
  offset?: Count;
  limit?: Count;
  /** TOP, cut out only with the clauses above: it applies after them, not before as the engine would. */
  top?: Count;
}

export interface Span {
  text: string;
  start: number;
}

/** A number written in the query, or a parameter that holds it. */
export type Count = { value: number } | { parameter: string; start: number; end: number };

interface Token extends Span {
  end: number;
  /** Bracket depth: clauses count only at 0, outside every (), [] and {}. */
  depth: number;
  word: string | undefined;
}

const CLOSE: Record<string, string> = { '(': ')', '[': ']', '{': '}' };
const WORD = /[A-Za-z_$@][\w$]*/y;
const NUMBER = /\d+(\.\d+)?([eE][+-]?\d+)?/y;
const SPACE = /\s+/y;

/** Splits a query into tokens: words, numbers, string literals and single punctuation marks. */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let depth = 0;
  let i = 0;
  const match = (pattern: RegExp) => {
    pattern.lastIndex = i;
    return pattern.exec(text)?.[0];
  };
  while (i < text.length) {
    const space = match(SPACE);
    if (space) {
      i += space.length;
      continue;
    }
    const char = text.charAt(i);
    let end = i + 1;
    if (char === '"' || char === "'") {
      while (end < text.length && text.charAt(end) !== char) end += text.charAt(end) === '\\' ? 2 : 1;
      end = Math.min(end + 1, text.length);
    } else end = i + (match(WORD) ?? match(NUMBER) ?? char).length;
    if (Object.values(CLOSE).includes(char)) depth -= 1;
    const chunk = text.slice(i, end);
    const afterDot = tokens.at(-1)?.text === '.';
    const word = /^[A-Za-z_]/.test(chunk) && !afterDot ? chunk.toUpperCase() : undefined;
    tokens.push({ text: chunk, start: i, end, depth, word });
    if (CLOSE[char]) depth += 1;
    i = end;
  }
  return tokens;
}

/** Cosmos DB's syntax error at a token; where the text ends too soon, at its last token. */
const near = (token: Token | undefined, tokens: Token[]) => {
  const at = token ?? tokens.at(-1);
  return errors.sql({
    start: at?.start ?? 0,
    end: at?.end ?? 0,
    code: 'SC1001',
    message: `Syntax error, incorrect syntax near '${at?.text ?? ''}'.`,
  });
};

/** Words that end a GROUP BY list. */
const AFTER_GROUP_BY = new Set(['ORDER', 'OFFSET', 'LIMIT']);

/** Finds DISTINCT, GROUP BY and OFFSET … LIMIT at the query's top level and cuts them out. */
export function splitClauses(text: string): Clauses {
  const tokens = tokenize(text);
  const cut: [number, number][] = [];
  const clauses: Clauses = { core: text, distinct: false, groupBy: [] };
  for (const token of tokens) {
    if (token.depth > 0 && ['DISTINCT', 'GROUP', 'OFFSET'].includes(token.word ?? ''))
      throw unsupported(token, `${token.word} inside a subquery`);
  }
  const top = tokens.filter((t) => t.depth === 0);
  const at = (i: number) => top[i];
  const word = (i: number) => top[i]?.word;
  /** Cuts tokens `from` up to (not including) `to` out of the core. */
  const cutOut = (from: number, to: number) =>
    cut.push([top[from]?.start ?? text.length, top[to]?.start ?? text.length]);
  let head = 1;
  if (word(0) === 'SELECT' && word(1) === 'DISTINCT') {
    clauses.distinct = true;
    cutOut(1, 2);
    head = 2;
  }
  const group = top.findIndex((t) => t.word === 'GROUP');
  if (group >= 0) {
    if (word(group + 1) !== 'BY') throw near(at(group + 1), top);
    let end = group + 2;
    while (end < top.length && !AFTER_GROUP_BY.has(word(end) ?? '')) end += 1;
    const order = at(end);
    if (order?.word === 'ORDER') throw unsupported(order, 'ORDER BY with GROUP BY');
    clauses.groupBy = list(text, tokens, at(group + 1)?.end ?? 0, order?.start ?? text.length);
    if (clauses.groupBy.length === 0) throw near(at(group + 1), top);
    cutOut(group, end);
  }
  const offset = top.findIndex((t) => t.word === 'OFFSET' || t.word === 'LIMIT');
  if (offset >= 0) {
    if (word(offset) !== 'OFFSET') throw near(at(offset), top);
    clauses.offset = count(at(offset + 1), top, 'OFFSET');
    if (word(offset + 2) !== 'LIMIT') throw near(at(offset + 2), top);
    clauses.limit = count(at(offset + 3), top, 'LIMIT');
    if (at(offset + 4)) throw near(at(offset + 4), top);
    cutOut(offset, top.length);
  }
  const shaped = clauses.distinct || clauses.groupBy.length > 0 || clauses.offset;
  if (shaped && word(head) === 'TOP') {
    clauses.top = count(at(head + 1), top, 'TOP');
    cutOut(head, head + 2);
  }
  // Blanked, not removed: the engine's and our error positions stay those of the text sent.
  clauses.core = cut.reduce(
    (core, [start, end]) => core.slice(0, start) + ' '.repeat(end - start) + core.slice(end),
    text,
  );
  return clauses;
}

/** The comma-separated expressions of `text` between `from` and `to`, split at bracket depth 0. */
function list(text: string, tokens: Token[], from: number, to: number): Span[] {
  const spans: Span[] = [];
  let start = from;
  for (const token of tokens) {
    if (token.start < from || token.start >= to || token.depth !== 0 || token.text !== ',') continue;
    spans.push({ text: text.slice(start, token.start), start });
    start = token.end;
  }
  spans.push({ text: text.slice(start, to), start });
  return spans
    .map((span) => ({ text: span.text.trim(), start: span.start + span.text.search(/\S|$/) }))
    .filter((span) => span.text !== '');
}

/** The largest OFFSET Cosmos DB takes (SC2062 past it); LIMIT and TOP are held to the same here. */
const MAX_COUNT = 2 ** 32 - 1;

function count(token: Token | undefined, tokens: Token[], clause: 'OFFSET' | 'LIMIT' | 'TOP'): Count {
  if (token?.text.startsWith('@')) return { parameter: token.text, start: token.start, end: token.end };
  if (!token || !/^\d+$/.test(token.text)) throw near(token, tokens);
  const value = Number(token.text);
  if (value > MAX_COUNT)
    throw errors.sql({
      start: token.start,
      end: token.end,
      ...(clause === 'OFFSET' && { code: 'SC2062' }),
      message: `The ${clause} count value exceeds the maximum allowed value.`,
    });
  return { value };
}

/** The value of an OFFSET, LIMIT or TOP count, from the query's parameters when it names one. */
export function resolveCount(count: Count, parameters: { name: string; value: unknown }[] = []): number {
  if ('value' in count) return count.value;
  const value = parameters.find((p) => p.name === count.parameter)?.value;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_COUNT) return value;
  throw errors.sql({
    start: count.start,
    end: count.end,
    message: `The parameter ${count.parameter} must hold a whole number from 0 to ${MAX_COUNT} here.`,
  });
}

/** The select list of a query (between SELECT [VALUE] and FROM, TOP cut out), and where FROM starts. */
export function selectList(core: string): { items: Span[]; value: boolean; from: number } {
  const tokens = tokenize(core);
  const top = tokens.filter((t) => t.depth === 0);
  const value = top[1]?.word === 'VALUE';
  const from = top.find((t, j) => j >= 1 && t.word === 'FROM');
  const start = top[value ? 2 : 1]?.start ?? core.length;
  const end = from?.start ?? core.length;
  return { items: list(core, tokens, start, end), value, from: end };
}

export function unsupported(span: Span, what: string) {
  return errors.sql({
    start: span.start,
    end: span.start + span.text.length,
    message: `${what} is not supported by this emulator.`,
  });
}
