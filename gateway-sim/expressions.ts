/**
 * Policy expressions: a small, safe subset of APIM's C# expressions, interpreted (never `eval`).
 *
 *   @(expr)  or  @{ return expr; }
 *   expr := term ( ("+" | "??") term )*
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

type Node =
  | { kind: 'literal'; value: Value }
  | { kind: 'context' }
  | { kind: 'member'; target: Node; name: string }
  | { kind: 'call'; target: Node; name: string; args: Node[] }
  | { kind: 'index'; target: Node; key: Node }
  | { kind: 'binary'; op: '+' | '??'; left: Node; right: Node };

const TOKEN = /\s*(?:("(?:[^"\\]|\\.)*")|(\d+(?:\.\d+)?)|([A-Za-z_]\w*)|(\?\?|[.()[\]<>,+;]))/y;

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

function parse(source: string): Node {
  const tokens = tokenize(source);
  let at = 0;
  const peek = () => tokens[at];
  const take = (expected?: string) => {
    const token = tokens[at++];
    if (token === undefined || (expected !== undefined && token !== expected))
      throw new ExpressionError(`expected ${expected ?? 'more'} but found ${token ?? 'the end'}`);
    return token;
  };
  const expr = (): Node => {
    let left = term();
    while (peek() === '+' || peek() === '??') {
      const op = take() as '+' | '??';
      left = { kind: 'binary', op, left, right: term() };
    }
    return left;
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
        // A generic argument (`GetValueOrDefault<string>`) changes nothing here: values are untyped.
        if (peek() === '<') {
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

function evaluate(node: Node, context: Model, dryRun: boolean): Value {
  switch (node.kind) {
    case 'literal':
      return node.value;
    case 'context':
      return context;
    case 'member':
      return member(evaluate(node.target, context, dryRun), node.name);
    case 'index': {
      const indexer = member(evaluate(node.target, context, dryRun), '[]');
      if (typeof indexer !== 'function') throw new ExpressionError('not indexable');
      return indexer(evaluate(node.key, context, dryRun));
    }
    case 'call': {
      const fn = member(evaluate(node.target, context, dryRun), node.name);
      if (typeof fn !== 'function') throw new ExpressionError(`${node.name} is not a method`);
      return fn(...node.args.map((arg) => evaluate(arg, context, dryRun)));
    }
    case 'binary': {
      const left = evaluate(node.left, context, dryRun);
      if (node.op === '??') {
        // A dry run checks both sides; a real one evaluates the right side only when needed.
        if (left !== null && !dryRun) return left;
        const right = evaluate(node.right, context, dryRun);
        return left ?? right;
      }
      return `${text(left)}${text(evaluate(node.right, context, dryRun))}`;
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
