/**
 * The runtime's key management API (azure-functions-host `KeysController`), over the host's one
 * KeyManager, the store `taskstack functions keys` uses too:
 *   GET /admin/functions/<name>/keys, GET|PUT|POST|DELETE /admin/functions/<name>/keys/<key>,
 *   GET /admin/host/{keys|functionkeys|systemkeys}, GET|PUT|POST|DELETE /admin/host/{…}/<key>.
 * Shapes, statuses and texts are the runtime's: `{"keys": [{name, value}], "links": [self]}`, `{name,
 * value, links}`, 201 with `Location` on create, 200 on update, 204 on delete, 404 with no body for an
 * unknown function or key. `_master` in a host scope is the master key: GET through systemkeys, PUT sets
 * it, POST renews it; no scope deletes it. The master key itself is checked by the admin router.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson } from '../../core/http.ts';
import type { Host } from '../host.ts';

/** ScriptConstants.MasterKeyName: how the admin API names the master key (its document names it `master`). */
const MASTER_KEY_NAME = '_master';
const KEY_BODY_LIMIT = 1024 * 1024;

type HostScope = 'functionKeys' | 'systemKeys';
type Scope = { fn: string } | { keyType: HostScope };

/** The routes of KeysController, or undefined for a path that is none of them. */
function route(
  path: string,
): { scope: { fn: string } | { hostScope: string }; keyName?: string } | undefined {
  const segments = path.split('/').slice(1);
  if (segments.some((segment) => segment === '')) return undefined;
  const decoded = segments.map((segment) => {
    try {
      return decodeURIComponent(segment);
    } catch {
      return segment;
    }
  });
  const [admin, kind, name, keys, keyName, ...rest] = decoded;
  if (admin?.toLowerCase() !== 'admin' || rest.length > 0) return undefined;
  if (kind?.toLowerCase() === 'functions' && name && keys?.toLowerCase() === 'keys') {
    return { scope: { fn: name }, keyName };
  }
  // admin/host/{keys:regex(^(keys|functionkeys|systemkeys)$)}[/{name}]
  if (kind?.toLowerCase() === 'host' && name && /^(keys|functionkeys|systemkeys)$/i.test(name) && !keyName) {
    return { scope: { hostScope: name.toLowerCase() }, keyName: keys };
  }
  return undefined;
}

/**
 * ASP.NET Core's answer to `BadRequest("text")`: the string output formatter's `text/plain` unless the
 * client asks for JSON, which gets the text as a JSON string.
 */
function badRequest(req: IncomingMessage, res: ServerResponse, text: string) {
  const accept = (req.headers.accept ?? '').toLowerCase();
  if (/\b(application|text)\/json\b|\+json\b/.test(accept) && !accept.includes('text/plain')) {
    sendJson(res, 400, text);
    return;
  }
  res
    .writeHead(400, {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': Buffer.byteLength(text),
    })
    .end(text);
}

const empty = (res: ServerResponse, status: number) => res.writeHead(status, { 'content-length': 0 }).end();

/**
 * The `Key` a PUT binds from its JSON body (Newtonsoft: property names in any case, numbers and booleans
 * read as their text); undefined when the body does not bind, which the runtime answers as a missing value.
 */
function boundValue(body: Buffer): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  let value: unknown;
  for (const [name, v] of Object.entries(parsed)) if (name.toLowerCase() === 'value') value = v;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** Serves the keys API if `path` is one of its routes (true), else leaves the request alone (false). */
export async function serveKeys(
  host: Host,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<boolean> {
  const path = url.pathname.replace(/\/+$/, '');
  const matched = route(path);
  const method = req.method ?? 'GET';
  if (!matched || !['GET', 'PUT', 'POST', 'DELETE'].includes(method)) return false;
  if (!matched.keyName && method !== 'GET') return false;
  // ApiModelUtility: links to the request's own URL (scheme, host and path, unescaped, no query).
  const self = `${host.baseUrl}${decodeURI(path)}`;
  const links = [{ rel: 'self', href: self }];
  const { keys } = host;

  let scope: Scope;
  if ('fn' in matched.scope) {
    // IsFunction: an unknown function is 404, whatever the verb.
    const fn = host.registry.find(matched.scope.fn);
    if (!fn) {
      empty(res, 404);
      return true;
    }
    scope = { fn: fn.name };
  } else {
    scope = { keyType: matched.scope.hostScope === 'systemkeys' ? 'systemKeys' : 'functionKeys' };
  }
  const isHostMaster = !('fn' in scope) && matched.keyName?.toLowerCase() === MASTER_KEY_NAME.toLowerCase();
  const target = 'fn' in scope ? { fn: scope.fn } : { keyType: scope.keyType };

  if (method === 'GET') {
    const listed = await keys.named(scope);
    // GetHostKey reads the master key among the system keys (includeMasterInSystemKeys).
    if (!('fn' in scope) && scope.keyType === 'systemKeys' && matched.keyName) {
      const master = (await keys.list()).masterKey as string;
      listed.push({ name: MASTER_KEY_NAME, value: master });
    }
    if (!matched.keyName) {
      sendJson(res, 200, { keys: listed, links });
      return true;
    }
    // The runtime's dictionaries look names up in any case.
    const wanted = matched.keyName.toLowerCase();
    const key = listed.find((k) => k.name.toLowerCase() === wanted);
    if (!key) {
      empty(res, 404);
      return true;
    }
    sendJson(res, 200, { name: matched.keyName, value: key.value, links });
    return true;
  }

  const keyName = matched.keyName as string;
  if (method === 'DELETE') {
    if (keyName.toLowerCase() === MASTER_KEY_NAME.toLowerCase()) {
      badRequest(req, res, 'Cannot delete System Key.');
      return true;
    }
    const deleted = await keys.delete({ ...target, name: keyName });
    empty(res, deleted ? 204 : 404);
    return true;
  }

  let value: string | undefined;
  if (method === 'PUT') {
    value = boundValue(await readBody(req, KEY_BODY_LIMIT));
    // The runtime refuses only a missing value; an empty one is refused here too, since it could never
    // be presented (a key of "" makes the master key unusable, the admin API with it).
    if (!value) {
      badRequest(req, res, 'Invalid key value');
      return true;
    }
  }
  const result = await keys.put(
    isHostMaster ? { keyType: 'masterKey', name: keyName, value } : { ...target, name: keyName, value },
  );
  sendJson(
    res,
    result.created ? 201 : 200,
    { name: keyName, value: result.value, links },
    result.created ? { location: self } : {},
  );
  return true;
}
