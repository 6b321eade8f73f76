/**
 * Policy expressions: a small, safe subset of APIM's C# expressions, interpreted (never `eval`).
 *
 *   @(expr)  or  @{ return expr; }
 *   expr := a ? b : c | a ?? b | a || b | a && b | a == b | a != b | a < b | a <= b | a > b | a >= b | a + b
 *           | !a | term      (C#'s precedence and associativity, loosest first)
 *   term := "string" | number | true | false | null | ( expr ) | context member-chain
 *   member-chain := .Name | .Name(args) | .Name<Type>(args) | [expr]
 *
 * The members reachable from `context` are exactly those built by {@link expressionContext}; anything
 * else is refused when the policy is loaded (a dry run over a sample context checks every member).
 */

import type { LastError } from './errors.ts';

export type Value = string | number | boolean | null | Model | ((...args: Value[]) => Value);
export interface Model {
  [member: string]: Value;
}

export class ExpressionError extends Error {}

type Binary = '+' | '??' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '&&' | '||';

type Node =
  | { kind: 'literal'; value: Value }
  | { kind: 'context' }
  | { kind: 'member'; target: Node; name: string }
  | { kind: 'call'; target: Node; name: string; args: Node[] }
  | { kind: 'index'; target: Node; key: Node }
  | { kind: 'not'; operand: Node }
  | { kind: 'conditional'; test: Node; then: Node; else: Node }
  | { kind: 'binary'; op: Binary; left: Node; right: Node };

const TOKEN =
  /\s*(?:("(?:[^"\\]|\\.)*")|(\d+(?:\.\d+)?)|([A-Za-z_]\w*)|(\?\?|==|!=|<=|>=|&&|\|\||[.()[\]<>,+;!?:]))/y;

function tokenize(source: string): string[] {
  const tokens: string[] = [];
  let at = 0;
  while (!/^\s*$/.test(source.slice(at))) {
    TOKEN.lastIndex = at;
    const match = TOKEN.exec(source);
    // A failed sticky match resets lastIndex to 0: the offending character is at `at`, past any spaces.
    if (!match) throw new ExpressionError(`unexpected "${source.slice(at).trim()[0]}"`);
    tokens.push(match[0].trim());
    at = TOKEN.lastIndex;
  }
  return tokens;
}

/** C#'s binary operators, loosest first; each level's operands are of the next level. */
const LEVELS: Binary[][] = [['||'], ['&&'], ['==', '!='], ['<', '<=', '>', '>='], ['+']];

function parse(source: string): Node {
  const tokens = tokenize(source);
  let at = 0;
  const peek = (ahead = 0) => tokens[at + ahead];
  const take = (expected?: string) => {
    const token = tokens[at++];
    if (token === undefined || (expected !== undefined && token !== expected))
      throw new ExpressionError(`expected ${expected ?? 'more'} but found ${token ?? 'the end'}`);
    return token;
  };
  // expr := coalesce ( "?" expr ":" expr )?   (right to left, as C#'s conditional)
  const expr = (): Node => {
    const test = coalesce();
    if (peek() !== '?') return test;
    take('?');
    const then = expr();
    take(':');
    return { kind: 'conditional', test, then, else: expr() };
  };
  // coalesce := binary ( "??" coalesce )?   (right to left, and looser than ||, as in C#)
  const coalesce = (): Node => {
    const left = binary(0);
    if (peek() !== '??') return left;
    take('??');
    return { kind: 'binary', op: '??', left, right: coalesce() };
  };
  const binary = (level: number): Node => {
    const ops = LEVELS[level];
    if (!ops) return unary();
    let left = binary(level + 1);
    while (ops.includes(peek() as Binary)) {
      const op = take() as Binary;
      left = { kind: 'binary', op, left, right: binary(level + 1) };
    }
    return left;
  };
  const unary = (): Node => {
    if (peek() !== '!') return term();
    take('!');
    return { kind: 'not', operand: unary() };
  };
  const args = (): Node[] => {
    take('(');
    const list: Node[] = [];
    while (peek() !== ')') {
      list.push(expr());
      if (peek() !== ')') take(',');
    }
    take(')');
    return list;
  };
  const term = (): Node => {
    const token = take();
    if (token.startsWith('"')) return { kind: 'literal', value: JSON.parse(token) as string };
    if (/^\d/.test(token)) return { kind: 'literal', value: Number(token) };
    if (token === 'true' || token === 'false') return { kind: 'literal', value: token === 'true' };
    if (token === 'null') return { kind: 'literal', value: null };
    if (token === '(') {
      const inner = expr();
      take(')');
      return inner;
    }
    if (token !== 'context') throw new ExpressionError(`"${token}" is not supported (only context.… is)`);
    let node: Node = { kind: 'context' };
    for (;;) {
      if (peek() === '[') {
        take('[');
        node = { kind: 'index', target: node, key: expr() };
        take(']');
      } else if (peek() === '.') {
        take('.');
        const name = take();
        if (!/^[A-Za-z_]\w*$/.test(name)) throw new ExpressionError(`expected a member name after "."`);
        // A generic argument (`GetValueOrDefault<string>(`) changes nothing here: values are untyped.
        // As C# does, `<` is one only when `Name > (` follows; else it is a comparison.
        if (peek() === '<' && /^[A-Za-z_]\w*$/.test(peek(1) ?? '') && peek(2) === '>' && peek(3) === '(') {
          take('<');
          take();
          take('>');
        }
        node =
          peek() === '('
            ? { kind: 'call', target: node, name, args: args() }
            : { kind: 'member', target: node, name };
      } else return node;
    }
  };
  const node = expr();
  if (at < tokens.length) throw new ExpressionError(`unexpected "${tokens[at]}"`);
  return node;
}

function member(target: Value, name: string): Value {
  // What .NET says of a member read on null (context.LastError outside on-error, context.Api unmatched).
  if (target === null) throw new ExpressionError('Object reference not set to an instance of an object.');
  if (typeof target !== 'object' || !Object.hasOwn(target, name))
    throw new ExpressionError(`unknown member ${name}`);
  return target[name] as Value;
}

/** A value's C# type, as the compiler's messages name it. */
function typeName(value: Value): string {
  if (value === null) return '<null>';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'double';
  if (typeof value === 'boolean') return 'bool';
  return typeof value === 'string' ? 'string' : 'object';
}

/** C#'s type rules for the operators (CS0019, CS0023, CS0029, CS0173), checked on the values at hand. */
const mismatch = (op: string, left: Value, right: Value) =>
  new ExpressionError(
    `Operator '${op}' cannot be applied to operands of type '${typeName(left)}' and '${typeName(right)}'`,
  );

function bool(value: Value): boolean {
  if (typeof value !== 'boolean')
    throw new ExpressionError(`Cannot implicitly convert type '${typeName(value)}' to 'bool'`);
  return value;
}

function compare(op: Binary, left: Value, right: Value): boolean {
  if (op === '==' || op === '!=') {
    // null equals only null; otherwise both sides must be of one simple type (numbers of either kind).
    const comparable =
      left === null ||
      right === null ||
      (typeof left === typeof right && typeof left !== 'object' && typeof left !== 'function');
    if (!comparable) throw mismatch(op, left, right);
    return (left === right) === (op === '==');
  }
  // Relational operators take numbers only (C#'s string has none).
  if (typeof left !== 'number' || typeof right !== 'number') throw mismatch(op, left, right);
  if (op === '<') return left < right;
  if (op === '<=') return left <= right;
  return op === '>' ? left > right : left >= right;
}

function evaluate(node: Node, context: Model, dryRun: boolean): Value {
  // A dry run evaluates every operand, so that each member and type is checked whichever way a call goes.
  const run = (inner: Node) => evaluate(inner, context, dryRun);
  switch (node.kind) {
    case 'literal':
      return node.value;
    case 'context':
      return context;
    case 'member':
      return member(run(node.target), node.name);
    case 'index': {
      const indexer = member(run(node.target), '[]');
      if (typeof indexer !== 'function') throw new ExpressionError('not indexable');
      return indexer(run(node.key));
    }
    case 'call': {
      const fn = member(run(node.target), node.name);
      if (typeof fn !== 'function') throw new ExpressionError(`${node.name} is not a method`);
      return fn(...node.args.map(run));
    }
    case 'not': {
      const operand = run(node.operand);
      if (typeof operand !== 'boolean')
        throw new ExpressionError(`Operator '!' cannot be applied to operand of type '${typeName(operand)}'`);
      return !operand;
    }
    case 'conditional': {
      const test = bool(run(node.test));
      if (!dryRun) return run(test ? node.then : node.else);
      const [then, otherwise] = [run(node.then), run(node.else)];
      if (then !== null && otherwise !== null && typeName(then) !== typeName(otherwise))
        throw new ExpressionError(
          `Type of conditional expression cannot be determined because there is no implicit conversion between '${typeName(then)}' and '${typeName(otherwise)}'`,
        );
      return test ? then : otherwise;
    }
    case 'binary': {
      const left = run(node.left);
      const { op } = node;
      if (op === '??') {
        if (left !== null && !dryRun) return left;
        const right = run(node.right);
        return left ?? right;
      }
      if (op === '&&' || op === '||') {
        if (typeof left !== 'boolean') throw mismatch(op, left, run(node.right));
        // The right side runs only when the left does not decide.
        if (!dryRun && left === (op === '||')) return left;
        const right = run(node.right);
        if (typeof right !== 'boolean') throw mismatch(op, left, right);
        return op === '&&' ? left && right : left || right;
      }
      if (op === '+') {
        // C# adds two numbers (StatusCode + 1 is 201); with anything else, as here, it concatenates.
        const right = run(node.right);
        return typeof left === 'number' && typeof right === 'number'
          ? left + right
          : `${text(left)}${text(right)}`;
      }
      return compare(op, left, run(node.right));
    }
  }
}

/** How a value reads when it lands in a header, URL or body (C#'s ToString, with null as ''). */
export function text(value: Value): string {
  if (value === null) return '';
  if (typeof value === 'object' || typeof value === 'function')
    throw new ExpressionError('not a simple value');
  return typeof value === 'boolean' ? (value ? 'True' : 'False') : String(value);
}

/** A policy attribute or text value: literal, or one whole expression (which alone builds the context). */
export type Template = (context: () => Model) => string;

/** Compiles a value; throws ExpressionError (naming the problem) for anything outside the subset. */
export function compileValue(raw: string): Template {
  const inline = /^@\(([\s\S]*)\)$/.exec(raw.trim());
  const block = /^@\{\s*return\s+([\s\S]*?);?\s*\}$/.exec(raw.trim());
  if (!inline && !block) {
    if (raw.trim().startsWith('@'))
      throw new ExpressionError('an expression must be @(...) or @{ return ...; }');
    return () => raw;
  }
  const node = parse((inline?.[1] ?? block?.[1]) as string);
  evaluate(node, SAMPLE, true);
  return (context) => text(evaluate(node, context(), false));
}

/** The request facts an expression may read. */
export interface ExpressionFacts {
  method: string;
  url: URL;
  headers: Record<string, string | string[] | undefined>;
  ipAddress: string;
  subscription?: { id: string; name: string; key: string };
  /** Absent for an error before an API (or an operation) matched: `context.Api` is then null. */
  api?: { name: string; path: string };
  operation?: { name: string; method: string; urlTemplate: string };
  variables: Map<string, string>;
  responseStatus?: number;
  /** Set in on-error only: `context.LastError` is null before. */
  lastError?: LastError;
}

const lookup = (get: (name: string) => string | undefined) => ({
  GetValueOrDefault: (name: Value, fallback: Value = null) => get(text(name)) ?? fallback,
  ContainsKey: (name: Value) => get(text(name)) !== undefined,
});

const lastError = (error: LastError): Model => ({
  Source: error.source,
  Reason: error.reason,
  Message: error.message,
  Scope: error.scope ?? null,
  Section: error.section ?? null,
  Path: error.path ?? null,
  PolicyId: error.policyId ?? null,
});

/** The `context` object of APIM's expressions, as far as this subset goes. */
export function expressionContext(facts: ExpressionFacts): Model {
  const header = (name: string) => {
    const value = facts.headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(',') : value;
  };
  const { url } = facts;
  const sub = facts.subscription;
  return {
    RequestId: '',
    Subscription: sub ? { Id: sub.id, Name: sub.name, Key: sub.key } : null,
    Api: facts.api ? { Name: facts.api.name, Path: facts.api.path } : null,
    Operation: facts.operation
      ? {
          Name: facts.operation.name,
          Method: facts.operation.method,
          UrlTemplate: facts.operation.urlTemplate,
        }
      : null,
    Request: {
      Method: facts.method,
      IpAddress: facts.ipAddress,
      Headers: lookup(header),
      Url: {
        Scheme: url.protocol.replace(':', ''),
        Host: url.hostname,
        Port: Number(url.port),
        Path: url.pathname,
        QueryString: url.search,
        Query: lookup((name) => url.searchParams.get(name) ?? undefined),
        ToString: () => url.href,
      },
    },
    Variables: {
      ...lookup((name) => facts.variables.get(name)),
      '[]': (name: Value) => {
        const value = facts.variables.get(text(name));
        if (value === undefined) throw new ExpressionError(`no variable ${text(name)}`);
        return value;
      },
    },
    Response: facts.responseStatus === undefined ? null : { StatusCode: facts.responseStatus },
    LastError: facts.lastError ? lastError(facts.lastError) : null,
  };
}

const SAMPLE: Model = {
  ...expressionContext({
    method: 'GET',
    url: new URL('https://127.0.0.1/'),
    headers: {},
    ipAddress: '127.0.0.1',
    subscription: { id: 'sample', name: 'sample', key: 'sample' },
    api: { name: '', path: '' },
    operation: { name: '', method: '', urlTemplate: '' },
    variables: new Map(),
    responseStatus: 200,
    lastError: { source: '', reason: '', message: '', scope: '', section: '', path: '', policyId: '' },
  }),
  Variables: { ...lookup(() => ''), '[]': () => '' },
};
