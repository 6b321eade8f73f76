import type { Container } from './container.ts';
import { errors } from './errors.ts';
import type { Item } from './model.ts';
import { matchesCondition } from './query.ts';

/** One operation of a Cosmos partial document update (a JSON-Patch dialect). */
interface PatchOperation {
  op: 'add' | 'set' | 'replace' | 'remove' | 'incr' | 'move';
  path: string;
  value?: unknown;
  from?: string;
}

const MAX_OPERATIONS = 10;
const OPS = new Set(['add', 'set', 'replace', 'remove', 'incr', 'move']);
type JsonNode = Record<string, unknown> | unknown[];

/** Checks a patch request body (`{ operations, condition? }` or the bare operations) and returns its parts. */
export function parsePatch(body: unknown): { operations: PatchOperation[]; condition?: string } {
  const request = (Array.isArray(body) ? { operations: body } : body) as {
    operations?: unknown;
    condition?: unknown;
  } | null;
  const operations = request?.operations;
  if (!Array.isArray(operations) || operations.length === 0) {
    throw errors.badRequest('Patch request has no operations.');
  }
  if (operations.length > MAX_OPERATIONS) {
    throw errors.badRequest(`Patch request has more than ${MAX_OPERATIONS} operations.`);
  }
  for (const operation of operations as PatchOperation[]) {
    if (
      !operation ||
      !OPS.has(operation.op) ||
      typeof operation.path !== 'string' ||
      !operation.path.startsWith('/')
    ) {
      throw errors.badRequest('Invalid patch operation. The operation type or path is not valid.');
    }
  }
  const condition = typeof request?.condition === 'string' ? request.condition : undefined;
  return { operations: operations as PatchOperation[], condition };
}

/** Applies the operations to a copy of `doc`; the original is untouched if any operation fails. */
export function applyPatch(
  doc: Record<string, unknown>,
  operations: PatchOperation[],
): Record<string, unknown> {
  const copy = structuredClone(doc);
  for (const operation of operations) {
    if (operation.path === '/id' || operation.from === '/id')
      throw errors.badRequest('Patch on id is not allowed.');
    if (operation.op === 'move') {
      const [fromParent, fromKey] = locate(copy, operation.from, operation.path);
      const moved = get(fromParent, fromKey, operation.from ?? '');
      remove(fromParent, fromKey);
      const [parent, key] = locate(copy, operation.path);
      put(parent, key, moved, 'set');
      continue;
    }
    const [parent, key] = locate(copy, operation.path);
    switch (operation.op) {
      case 'add':
      case 'set':
        put(parent, key, operation.value, operation.op);
        break;
      case 'replace':
        get(parent, key, operation.path);
        put(parent, key, operation.value, 'set');
        break;
      case 'remove':
        get(parent, key, operation.path);
        remove(parent, key);
        break;
      case 'incr': {
        const current = Array.isArray(parent) || key in parent ? get(parent, key, operation.path) : 0;
        if (typeof current !== 'number' || typeof operation.value !== 'number') {
          throw errors.badRequest(`Increment operation requires a number at path '${operation.path}'.`);
        }
        put(parent, key, current + operation.value, 'set');
      }
    }
  }
  return copy;
}

/** Resolves a path to its parent container and last key; the parent must exist. */
function locate(
  doc: Record<string, unknown>,
  path: string | undefined,
  ...others: string[]
): [JsonNode, string] {
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw errors.badRequest(`Invalid patch path '${path ?? others[0] ?? ''}'.`);
  }
  const parts = path
    .slice(1)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
  const last = parts.pop() as string;
  let node: unknown = doc;
  for (const part of parts) {
    node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
    if (node === null || typeof node !== 'object') {
      throw errors.badRequest(`Target path '${path}' does not exist. Patch operation cannot be applied.`);
    }
  }
  return [node as JsonNode, last];
}

function arrayIndex(array: unknown[], key: string, allowEnd: boolean): number {
  const index = key === '-' ? array.length : Number(key);
  const max = allowEnd ? array.length : array.length - 1;
  if (!Number.isInteger(index) || index < 0 || index > max) {
    throw errors.badRequest(
      `Index '${key}' is out of range for the array. Patch operation cannot be applied.`,
    );
  }
  return index;
}

function get(parent: JsonNode, key: string, path: string): unknown {
  if (Array.isArray(parent)) return parent[arrayIndex(parent, key, false)];
  if (!(key in parent))
    throw errors.badRequest(`Target path '${path}' does not exist. Patch operation cannot be applied.`);
  return parent[key];
}

/** `add` inserts into arrays; `set` overwrites the element; on objects both create or overwrite. */
function put(parent: JsonNode, key: string, value: unknown, mode: 'add' | 'set'): void {
  if (!Array.isArray(parent)) {
    parent[key] = value;
  } else if (mode === 'add') {
    parent.splice(arrayIndex(parent, key, true), 0, value);
  } else {
    parent[arrayIndex(parent, key, key === '-')] = value;
  }
}

function remove(parent: JsonNode, key: string): void {
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, false), 1);
  else delete parent[key];
}

/** Reads, patches and replaces a document; the condition (`FROM c WHERE ...`) must hold first. */
export function patchItem(
  target: Container,
  pk: string,
  itemId: string,
  body: unknown,
  ifMatch?: string,
): Item {
  const { operations, condition } = parsePatch(body);
  const current = target.read(pk, itemId);
  if (!current) throw errors.itemNotFound();
  if (condition !== undefined && !matchesCondition(current, condition)) throw errors.preconditionFailed();
  return target.write('replace', applyPatch(current, operations), pk, { ifMatch, urlId: itemId }).item;
}
