/** The host's HTTP front: functions, admin API, extension webhooks. Failures never reach the client as traces. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { BodyTooLargeError, MAX_HEADER_SIZE } from '../../core/http.ts';
import type { Host, TriggerKind } from '../host.ts';
import { serveAdmin } from './admin.ts';
import { closeAfterAnswer } from './body.ts';
import { httpRoutes, serveFunction } from './functions.ts';
import { BadRequestTargetError } from './request-path.ts';

/**
 * The request target as a URL: `//a/b` is a path (URL would read the authority `a`), `http://x/a` the
 * absolute form; one that is no URL is Kestrel's 400.
 */
function requestUrl(target: string): URL {
  try {
    return new URL(target.startsWith('/') ? `http://host${target}` : target, 'http://host');
  } catch {
    throw new BadRequestTargetError(`invalid request target ${target}`);
  }
}

/** The runtime's home page; with `AzureWebJobsDisableHomepage` true (any case), 204 and nothing. */
function homepage(host: Host, res: ServerResponse): void {
  if (host.settings.AzureWebJobsDisableHomepage?.toLowerCase() === 'true') {
    res.writeHead(204).end();
    return;
  }
  res
    .writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
    .end('Your Functions 4.0 app is up and running\n');
}

export function createHostServer(host: Host, kinds: Map<string, TriggerKind>): Server {
  const routes = httpRoutes(host);
  const webhooks = new Map(
    [...kinds.values()].flatMap((kind) => (kind.webhook ? [[kind.webhook.name, kind.webhook]] : [])),
  );
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = requestUrl(req.url ?? '/');
    const path = url.pathname.toLowerCase();
    if (path === '/admin' || path.startsWith('/admin/')) return serveAdmin(host, kinds, req, res, url);
    const webhook = /^\/runtime\/webhooks\/([^/]+)\/?$/.exec(path);
    const extension = webhook?.[1] ? webhooks.get(webhook[1]) : undefined;
    if (extension) return extension.serve(host, req, res, url);
    if (await serveFunction(host, routes, req, res, url)) return;
    // The home page answers only what no function took (HomepageMiddleware runs after them): with an
    // empty routePrefix, a function's route may be `/` itself. Any method, as there.
    if (path === '/') return homepage(host, res);
    res.writeHead(404, { 'content-length': 0 }).end();
  };
  const server = createServer({ maxHeaderSize: MAX_HEADER_SIZE, keepAliveTimeout: 120_000 }, (req, res) => {
    handle(req, res).catch((error: Error) => {
      if (error instanceof BadRequestTargetError && !res.headersSent) {
        // Kestrel's answer to a request target it cannot take: 400, empty, the connection closed.
        res.writeHead(400, { 'content-length': 0, connection: 'close' }).end();
        return;
      }
      if (error instanceof BodyTooLargeError) {
        // Stop reading the oversized body: answer, then close the connection.
        closeAfterAnswer(req, res);
        res.writeHead(413, { 'content-length': 0 }).end();
        return;
      }
      host.logs.host(
        'error',
        `request ${req.method} ${req.url?.split('?')[0]} failed: ${error.stack ?? error.message}`,
      );
      if (!res.headersSent) res.writeHead(500, { 'content-length': 0 });
      res.end();
    });
  });
  return server;
}
