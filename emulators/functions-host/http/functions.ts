/** HTTP-triggered functions: route table, methods, authorization levels, invocation. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyTooLargeError } from '../../core/http.ts';
import type { RegisteredFunction } from '../core-api.ts';
import { type Host, isDisabled, triggerOf } from '../host.ts';
import type { AuthLevel } from '../keys.ts';
import { closeAfterAnswer, readAtMost } from './body.ts';
import { httpBindingData, httpOutput, httpOutputName, sendRpcHttp, toRpcHttp } from './convert.ts';
import { decodeRequestPath, pathSegments } from './request-path.ts';
import { type CompiledRoute, compileRoute, matchRoute, ordinalIgnoreCase } from './routes.ts';
import { serveStreaming } from './stream.ts';

/** The Executing line's reason for a run asked for through the admin API. */
export const ADMIN_REASON = 'This function was programmatically called via the host APIs.';

interface HttpRoute {
  fn: RegisteredFunction;
  bindingName: string;
  /** The binding the HTTP response comes from (usually `$return`); none answers 200 with no body. */
  outputName: string | undefined;
  route: CompiledRoute;
  /** Upper-case methods; undefined accepts every method. */
  methods: Set<string> | undefined;
  authLevel: AuthLevel;
  /** `AzureWebJobs.<name>.Disabled`: only the master key runs it. */
  disabled: boolean;
}

const EMPTY = Buffer.alloc(0);
/**
 * The host hands the worker a body only when the request declares its length (its ToRpcHttp reads the
 * body if `ContentLength > 0`): a chunked body never reaches a function that does not stream
 * (azure-functions-host#7930, azure-functions-nodejs-worker#524).
 */
const declaresBody = (req: IncomingMessage) => Number(req.headers['content-length'] ?? 0) > 0;

/**
 * The body a function gets: the whole body, or — past the limit the app declares — its first limit + 1
 * bytes, which the function refuses itself. Beyond the host's limit (100 MB by default) it refuses (413).
 */
async function functionBody(host: Host, req: IncomingMessage): Promise<{ body: Buffer; cut: boolean }> {
  const max = host.config.requestBodyLimit;
  if (Number(req.headers['content-length'] ?? 0) > max) throw new BodyTooLargeError(max);
  const limit = Math.min(host.config.maxRequestBodySize ?? max, max);
  const read = await readAtMost(req, limit + 1);
  if (read.body.length > max) throw new BodyTooLargeError(max);
  return read;
}

/**
 * The key a request presents, as the host's AuthenticationLevelHandler reads it: the first line of an
 * `x-functions-key` header whenever one is sent (an empty one presents no key, and the query is not
 * read then), else the first `code` query parameter, its name in any case (ASP.NET's query collection).
 */
export function presentedKey(req: IncomingMessage, query: URLSearchParams): string | undefined {
  // From the raw lines: Node joins a repeated header into one value.
  const raw = req.rawHeaders;
  for (let at = 0; at < raw.length; at += 2)
    if ((raw[at] as string).toLowerCase() === 'x-functions-key') return raw[at + 1] || undefined;
  for (const [name, value] of query) if (name.toLowerCase() === 'code') return value || undefined;
  return undefined;
}

export function httpRoutes(host: Host): HttpRoute[] {
  const routes: HttpRoute[] = [];
  for (const fn of host.registry.functions.values()) {
    const trigger = triggerOf(fn);
    if (trigger.type.toLowerCase() !== 'httptrigger') continue;
    const route = typeof trigger.route === 'string' && trigger.route.trim() ? trigger.route.trim() : fn.name;
    const methods = Array.isArray(trigger.methods)
      ? trigger.methods.map((m) => String(m).toUpperCase())
      : undefined;
    const level = String(trigger.authLevel ?? 'function').toLowerCase();
    if (level !== 'anonymous' && level !== 'function' && level !== 'admin') {
      throw new Error(
        `function ${fn.name}: authLevel "${trigger.authLevel}" is not anonymous, function or admin`,
      );
    }
    routes.push({
      fn,
      bindingName: trigger.name,
      outputName: httpOutputName(fn),
      route: compileRoute([host.config.routePrefix, route.replace(/^\/+/, '')].filter(Boolean).join('/')),
      methods: methods?.length ? new Set(methods) : undefined,
      authLevel: level,
      disabled: isDisabled(host.settings, fn),
    });
  }
  // The first route that matches wins, in the order the runtime lists its functions: by name in any
  // case (FunctionMetadataManager), with no precedence between templates (the HTTP extension's
  // WebJobsRouteBuilder adds them as they come): azure-functions-host#9876,
  // azure-functions-nodejs-library#300.
  return routes.sort((a, b) => ordinalIgnoreCase(a.fn.name, b.fn.name));
}

/** The invoke URL of an HTTP function, as the admin API reports it. */
export function invokeUrl(host: Host, route: HttpRoute): string {
  return `${host.baseUrl}/${route.route.template}`;
}

/**
 * Serves a request if an HTTP function's route and methods match; returns false otherwise (the host
 * answers 404 then — also for a known route with another method, as the real host does).
 */
export async function serveFunction(
  host: Host,
  routes: HttpRoute[],
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<boolean> {
  const path = pathSegments(decodeRequestPath(url.pathname));
  const method = req.method ?? 'GET';
  let found: { route: HttpRoute; params: Record<string, string> } | undefined;
  for (const route of routes) {
    if (route.methods && !route.methods.has(method)) continue;
    const params = matchRoute(route.route, path);
    if (params) {
      found = { route, params };
      break;
    }
  }
  if (!found) return false;
  const { route, params } = found;
  // An anonymous function takes no key: no need to look for one.
  const allowed =
    route.authLevel === 'anonymous' ||
    (await host.keys.authorize(route.authLevel, presentedKey(req, url.searchParams), route.fn.name));
  if (!allowed) {
    res.writeHead(401, { 'content-length': 0 }).end();
    return true;
  }
  // As FunctionInvocationMiddleware: once authorized, a disabled function is 404 but for the master key.
  if (route.disabled && (await host.keys.level(presentedKey(req, url.searchParams))) !== 'admin') {
    res.writeHead(404, { 'content-length': 0 }).end();
    return true;
  }
  if (host.httpStreamUri) {
    // The body streams to the function: it gives no binding data.
    const bindingData = () => httpBindingData(req, url, params, undefined);
    const call = { reason: ADMIN_REASON, bindingData, limit: host.config.requestBodyLimit };
    await serveStreaming(host, route.fn, route.bindingName, params, req, res, call);
    return true;
  }
  // A chunked body is left unread; once the answer is out, Node drains it, as Kestrel does.
  const { body, cut } = declaresBody(req) ? await functionBody(host, req) : { body: EMPTY, cut: false };
  if (cut) closeAfterAnswer(req, res);
  const outcome = await host.invoker.invoke(route.fn, {
    inputData: [{ name: route.bindingName, data: { http: toRpcHttp(req, body, host.baseUrl, params) } }],
    reason: ADMIN_REASON,
    bindingData: () => httpBindingData(req, url, params, body),
  });
  if (!outcome.succeeded) {
    // The trace is in the log; the client learns only that the function failed.
    res.writeHead(500, { 'content-length': 0 }).end();
    return true;
  }
  sendRpcHttp(res, httpOutput(route.outputName, outcome.response), method === 'HEAD');
  return true;
}
