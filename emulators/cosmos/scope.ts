import { errors } from './errors.ts';

interface Node {
  type?: string;
  name?: string;
  computed?: boolean;
  [key: string]: unknown;
}
const nameOf = (node: unknown) => (node as Node | null)?.name;

/** Names each alias a query's FROM and JOINs declare, added to those of the queries around it. */
function declared(query: Node, outer: Set<string>): Set<string> {
  const from = query.from as { source: Node; joins: Node[] } | null;
  const scope = new Set(outer);
  for (const source of from ? [from.source, ...from.joins] : []) {
    const alias = nameOf(source.alias);
    if (alias) scope.add(alias);
    // The container's own name (`FROM root r`, `FROM t IN c.tags`) is let through too: lenient where unsure.
    let expression = source.expression as Node;
    while (expression.type === 'collection_member_expression') expression = expression.object as Node;
    if (expression.type === 'collection_expression') scope.add(nameOf(expression.expression) ?? '');
  }
  return scope;
}

/** The identifiers used as values that no alias in scope declares, in the order of the tree. */
function* unresolved(node: unknown, scope: Set<string>): Generator<string> {
  if (Array.isArray(node)) {
    for (const item of node) yield* unresolved(item, scope);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const { type } = node as Node;
  // Container names (`FROM c`, `IN c.tags`) are not values.
  if (type === 'collection_expression') return;
  if (type === 'identifier') {
    if (!scope.has(nameOf(node) ?? '')) yield nameOf(node) as string;
    return;
  }
  const inner = type === 'select_query' ? declared(node as Node, scope) : scope;
  for (const [key, value] of Object.entries(node)) {
    // Names that are not values: output names, object keys, function names, `.property`.
    if (key === 'alias' || key === 'key' || key === 'name') continue;
    if (key === 'property' && type?.endsWith('member_expression') && !(node as Node).computed) continue;
    yield* unresolved(value, inner);
  }
}

/**
 * Refuses a name that no FROM, JOIN or IN declares with Cosmos's SC2001, before the query runs: the
 * engine would fail only when it evaluates the name on an item, with its own JavaScript error.
 */
export function checkIdentifiers(text: string, ast: unknown) {
  const [name] = unresolved(ast, new Set());
  if (name === undefined) return;
  // Where the name stands as a value: not in a string, not after `.`, `@` or `AS`, not an object key.
  const masked = text.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, (m) => ' '.repeat(m.length));
  // Identifiers are [A-Za-z_][A-Za-z0-9_]*: nothing to escape.
  const value = new RegExp(`(?<![.@\\w]|\\b[Aa][Ss]\\s+)${name}(?!\\w|\\s*:)`);
  const start = value.exec(masked)?.index ?? 0;
  throw errors.sql({
    start,
    end: start + name.length,
    code: 'SC2001',
    message: `Identifier '${name}' could not be resolved.`,
  });
}
