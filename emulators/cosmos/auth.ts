import { createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { errors } from './errors.ts';

/** What a request addresses, as Cosmos signs it: the resource type and the link of the resource or its parent. */
export interface Target {
  /** Path segments, ids decoded (`['dbs', 'db1', 'colls', 'c1']`). */
  segments: string[];
  resourceType: string;
  resourceLink: string;
}

/** Parses a request path; undefined when it cannot be decoded. The SDK sometimes doubles the first slash. */
export function parseTarget(pathname: string): Target | undefined {
  let segments = pathname.split('/').filter(Boolean);
  // Most paths have nothing escaped: decoding is only needed when there is a '%'.
  if (pathname.includes('%')) {
    try {
      segments = segments.map(decodeURIComponent);
    } catch {
      return undefined;
    }
  }
  // A feed (`dbs/db1/colls`) is signed with its parent's link; a resource (`dbs/db1`) with its own.
  const feed = segments.length % 2 === 1;
  return {
    segments,
    resourceType: feed ? (segments.at(-1) as string) : (segments.at(-2) ?? ''),
    resourceLink: (feed ? segments.slice(0, -1) : segments).join('/'),
  };
}

export type Credential = { type: 'master' } | { type: 'aad'; token: string };

/**
 * Reads the `authorization` header (`type=master&ver=1.0&sig=...`, URL-encoded) and checks a master-key
 * signature over verb, resource type, resource link and date. AAD tokens are returned for the caller to verify.
 */
export function checkAuthorization(
  headers: IncomingHttpHeaders,
  verb: string,
  target: Target,
  masterKey: KeyObject,
): Credential {
  const header = headers.authorization;
  if (!header) throw errors.missingAuthorization();
  let fields: Map<string, string>;
  try {
    // Split by hand: the signature is base64 and URLSearchParams would turn its '+' into spaces.
    fields = new Map(
      decodeURIComponent(header)
        .split('&')
        .map((pair) => {
          const at = pair.indexOf('=');
          return [pair.slice(0, at), pair.slice(at + 1)] as [string, string];
        }),
    );
  } catch {
    throw errors.badToken();
  }
  const type = fields.get('type');
  const sig = fields.get('sig');
  if (fields.get('ver') !== '1.0' || !sig) throw errors.badToken();
  if (type === 'aad') return { type: 'aad', token: sig };
  if (type !== 'master') throw errors.badToken();
  const date = String(headers['x-ms-date'] ?? headers.date ?? '').toLowerCase();
  const payload = `${verb.toLowerCase()}\n${target.resourceType.toLowerCase()}\n${target.resourceLink}\n${date}\n\n`;
  const expected = createHmac('sha256', masterKey).update(payload).digest();
  const given = Buffer.from(sig, 'base64');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw errors.badSignature(payload);
  return { type: 'master' };
}

const ACTIONS = 'Microsoft.DocumentDB/databaseAccounts';
const CONTAINER_ACTIONS = `${ACTIONS}/sqlDatabases/containers`;

/**
 * The data-plane RBAC action a request needs, or 'control' for database/container management, which
 * Cosmos refuses to Entra tokens whatever the role (it belongs to the control plane).
 */
export function requiredAction(method: string, target: Target, headers: IncomingHttpHeaders): string {
  const [, , , , docs] = target.segments;
  if (docs !== 'docs') return method === 'GET' || isQuery(headers) ? `${ACTIONS}/readMetadata` : 'control';
  if (isQuery(headers)) return `${CONTAINER_ACTIONS}/executeQuery`;
  // Reading the whole feed (readAll, change feed) is the readChangeFeed action.
  if (method === 'GET')
    return `${CONTAINER_ACTIONS}/${target.segments.length === 5 ? 'readChangeFeed' : 'items/read'}`;
  if (method === 'DELETE') return `${CONTAINER_ACTIONS}/items/delete`;
  if (method === 'PUT' || method === 'PATCH') return `${CONTAINER_ACTIONS}/items/replace`;
  if (headers['x-ms-cosmos-is-batch-request']) return `${CONTAINER_ACTIONS}/items/*`;
  return `${CONTAINER_ACTIONS}/items/${isTrue(headers['x-ms-documentdb-is-upsert']) ? 'upsert' : 'create'}`;
}

/** What the built-in data roles allow (by role name, as in role assignments). */
export function roleAllows(role: string, action: string): boolean {
  if (action === 'control') return false;
  if (role === 'Cosmos DB Built-in Data Contributor') return true;
  if (role === 'Cosmos DB Built-in Data Reader') {
    return (
      action.endsWith('/readMetadata') ||
      action.endsWith('/executeQuery') ||
      action.endsWith('/readChangeFeed') ||
      action.endsWith('/items/read')
    );
  }
  return false;
}

export const isTrue = (value: string | string[] | undefined) => String(value).toLowerCase() === 'true';
export const isQuery = (headers: IncomingHttpHeaders) =>
  isTrue(headers['x-ms-documentdb-isquery']) ||
  isTrue(headers['x-ms-cosmos-is-query-plan-request']) ||
  headers['content-type'] === 'application/query+json';
