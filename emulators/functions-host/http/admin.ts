/** The host's admin API (master key): function metadata, run a non-HTTP function now, host status, keys (`admin-keys.ts`); and the keyless ping. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { readBody, sendJson } from '../../core/http.ts';
import type { RegisteredFunction } from '../core-api.ts';
import { type Host, isDisabled, type TriggerKind, triggerOf } from '../host.ts';
import { serveKeys } from './admin-keys.ts';
import { ADMIN_REASON, httpRoutes, invokeUrl, presentedKey } from './functions.ts';

const ADMIN_BODY_LIMIT = 10 * 1024 * 1024;
const startedAt = Date.now();

function metadata(host: Host, fn: RegisteredFunction, routes: ReturnType<typeof httpRoutes>) {
  const route = routes.find((r) => r.fn === fn);
  return {
    name: fn.name,
    href: `${host.baseUrl}/admin/functions/${encodeURIComponent(fn.name)}`,
    invoke_url_template: route ? invokeUrl(host, route) : null,
    language: 'node',
    config: {
      name: fn.name,
      language: 'node',
      bindings: Object.entries(fn.bindings).map(([name, b]) => ({ name, ...b })),
    },
    files: null,
    test_data: null,
    isDisabled: isDisabled(host.settings, fn),
    isDirect: false,
    isProxy: false,
  };
}

/** `{"input": …}` as FunctionInvocation binds it: a string (other JSON values as their text). */
function parseInvocation(body: Buffer): string | undefined {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
    const input = (parsed as { input?: unknown }).input;
    return input === undefined || input === null
      ? ''
      : typeof input === 'string'
        ? input
        : JSON.stringify(input);
  } catch {
    return undefined;
  }
}

export async function serveAdmin(
  host: Host,
  kinds: Map<string, TriggerKind>,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const path = url.pathname.replace(/\/+$/, '').toLowerCase();
  // The runtime's health ping (HostController.Ping) takes no key, and is never cached.
  if ((req.method === 'GET' || req.method === 'POST') && path === '/admin/host/ping') {
    res
      .writeHead(200, { 'cache-control': 'no-store,no-cache', pragma: 'no-cache', 'content-length': 0 })
      .end();
    return;
  }
  // AuthorizationLevel.Admin, as the runtime's AdminAuthLevel policy decides it: no key or an unknown
  // one is not authenticated (401); a system or host function key is, but not as admin (403).
  const level = await host.keys.level(presentedKey(req, url.searchParams));
  if (level !== 'admin') {
    res.writeHead(level === 'anonymous' ? 401 : 403, { 'content-length': 0 }).end();
    return;
  }
  if (await serveKeys(host, req, res, url)) return;
  const routes = httpRoutes(host);
  if (req.method === 'GET' && path === '/admin/host/status') {
    sendJson(res, 200, {
      id: host.hostId,
      state: 'Running',
      version: host.registry.api.hostVersion,
      versionDetails: `${host.registry.api.hostVersion} (taskstack local host)`,
      platformVersion: '',
      instanceId: host.hostId,
      computerName: hostname(),
      processUptime: Date.now() - startedAt,
    });
    return;
  }
  if (req.method === 'GET' && path === '/admin/functions') {
    sendJson(
      res,
      200,
      [...host.registry.functions.values()].map((fn) => metadata(host, fn, routes)),
    );
    return;
  }
  const match = /^\/admin\/functions\/([^/]+)$/.exec(url.pathname.replace(/\/+$/, ''));
  const fn = match?.[1] ? host.registry.find(decodeURIComponent(match[1])) : undefined;
  if (!fn || (req.method !== 'GET' && req.method !== 'POST')) {
    res.writeHead(404, { 'content-length': 0 }).end();
    return;
  }
  if (req.method === 'GET') {
    sendJson(res, 200, metadata(host, fn, routes));
    return;
  }
  const input = parseInvocation(await readBody(req, ADMIN_BODY_LIMIT));
  if (input === undefined) {
    sendJson(res, 400, { message: 'The request body must be a JSON object such as {"input": "…"}.' });
    return;
  }
  const trigger = triggerOf(fn);
  const kind = kinds.get(trigger.type.toLowerCase());
  if (!kind?.adminInput) {
    sendJson(res, 400, {
      message: `Function ${fn.name} (${trigger.type}) cannot be run through the admin API.`,
    });
    return;
  }
  // Accepted at once; the invocation runs on, reporting through the log as the runtime does. An input
  // the trigger cannot read (a missing blob, an event that is no JSON) fails that invocation, as the
  // runtime's binding of it does.
  res.writeHead(202, { 'content-length': 0 }).end();
  const triggerInput = await kind.adminInput(host, fn, trigger, input).catch((error: Error) => ({
    inputData: [],
    reason: ADMIN_REASON,
    failure: new Error(`Exception binding parameter '${trigger.name}'. ${error.message}`),
  }));
  void host.invoker.invoke(fn, triggerInput);
}
