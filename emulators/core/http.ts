import { readFileSync } from 'node:fs';
import {
  request as httpRequest,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import {
  createServer as createHttpsServer,
  type Server as HttpsServer,
  request as httpsRequest,
  type ServerOptions,
} from 'node:https';
import { type AddressInfo, connect, type Server as NetServer } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TlsMaterial } from './ca.ts';

export const LOOPBACK = '127.0.0.1';

/**
 * `env` with loopback added to NO_PROXY (kept with the developer's own entries): the Azure SDKs send
 * every request through HTTP(S)_PROXY unless NO_PROXY names its host, with no exception for loopback,
 * and a developer's proxy (a company's, say) cannot reach this machine's stack.
 */
export function bypassProxyForLoopback(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const listed = (env.NO_PROXY ?? env.no_proxy ?? '').split(',').map((entry) => entry.trim());
  const noProxy = [...new Set([...listed.filter(Boolean), LOOPBACK, 'localhost'])].join(',');
  return { ...env, NO_PROXY: noProxy, no_proxy: noProxy };
}

/** A port another process holds: named so the launcher can say which component wanted it. */
export class PortInUseError extends Error {
  constructor(readonly port: number) {
    super(`port ${port} is already in use`);
  }
}

/** Whether something accepts TCP connections on the loopback port now. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, LOOPBACK);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** How long a health probe waits for an answer. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * The status `url` answers to one request (GET unless `method` says otherwise; redirects not followed,
 * body discarded): what a component's health check asks of its own listener. Node's own client, not
 * fetch: fetch's first call loads undici, ~45 ms of CPU and a few MB in every component that only
 * probes itself. `ca` is the stack's CA for an HTTPS endpoint (the caller's process may not trust it).
 */
export function probe(url: string, options: { method?: string; ca?: string } = {}): Promise<number> {
  const request = url.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', ca: options.ca, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.setTimeout(PROBE_TIMEOUT_MS, () => req.destroy(new Error(`${url} did not answer`)));
    req.on('error', reject).end();
  });
}

/**
 * GETs `url` and parses its JSON answer (`body` undefined when it is not JSON). Node's own client, as
 * `probe`: no undici, no SDK. `timeoutMs` bounds each wait for the server.
 */
export function getJson(
  url: string,
  headers: Record<string, string> = {},
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<{ status: number; body: unknown }> {
  const request = url.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${new URL(url).origin} did not answer`)));
    req.on('error', reject).end();
  });
}

/**
 * Loads Node's fetch (undici, ~40 ms of CPU) now. The Azure SDKs' first request loads it in any case,
 * by reading the global `FormData` (their form-data policy): a component that must make one before it
 * is ready loads it while it waits for something else instead.
 */
export function loadFetch(): void {
  void globalThis.FormData;
}

/**
 * The first port the kernel hands out for outgoing connections and listen(0) (Linux reads it from
 * procfs; macOS and Windows start at IANA's 49152). Read once, at the first listen on port 0.
 */
let ephemeralLow: number | undefined;
function readEphemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 0) return low;
  } catch {}
  return 49_152;
}
/** Below every conventional port the stack uses (the highest is Azurite's 10000). */
const FREE_LOW = 20_000;
/** The setting that narrows free ports' draws to `LOW-HIGH`: stacks side by side each get a range. */
export const FREE_PORTS_ENV = 'TASKSTACK_FREE_PORTS';

/** The range free ports are drawn from, `[low, high)`: TASKSTACK_FREE_PORTS if set, else the default. */
export function freeRange(): [number, number] {
  const setting = process.env[FREE_PORTS_ENV];
  if (setting) {
    const [low, high] = (/^(\d+)-(\d+)$/.exec(setting.trim()) ?? []).slice(1).map(Number);
    if (!low || !high || low < 1024 || high > 65535 || high - low + 1 < 100)
      throw new Error(`${FREE_PORTS_ENV}=${setting}: give LOW-HIGH, at least 100 ports within 1024-65535`);
    return [low, high + 1];
  }
  ephemeralLow ??= readEphemeralLow();
  return [FREE_LOW, Math.max(ephemeralLow, FREE_LOW + 1_000)];
}

const listenOn = (server: NetServer, port: number, host: string) =>
  new Promise<number>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new PortInUseError(port) : error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });

/**
 * Where free ports' draws come from: its own, so that a test can decide a draw without counting the
 * Math.random calls of everything else that runs meanwhile in its process.
 */
export const portDraw = { random: Math.random };

/**
 * Listens on `host:port` (loopback by default) and resolves with the port actually bound. Port 0 is a
 * free port drawn at random below the kernel's ephemeral range, not the kernel's own choice: that lies
 * in the range, so while its server is down (stopped, restarting after a crash) any outgoing connection
 * could be given it, and the server could not listen on it again (seen in CI: "cosmos failed to start:
 * port … is already in use" in an outage test).
 */
export async function listen(server: NetServer, port: number, host = LOOPBACK): Promise<number> {
  if (port !== 0) return listenOn(server, port, host);
  const [low, high] = freeRange();
  for (let tries = 0; ; tries += 1) {
    const drawn = low + Math.floor(portDraw.random() * (high - low));
    if (drawnLately(drawn) && tries < 100) continue;
    try {
      const bound = await listenOn(server, drawn, host);
      lately.set(bound, Date.now());
      return bound;
    } catch (error) {
      // Taken (by another stack, say): another draw. After many, the range is not ours to use.
      if (!(error instanceof PortInUseError) || tries >= 100) throw error;
    }
  }
}

/**
 * Ports this process drew in the last minutes, which its next draws skip: a port drawn and let go for
 * another process to listen on (a launcher's reservation, a test's freePort for a web app) was free
 * again to this process's next draw, and a stack started meanwhile took it ("the web app cannot listen
 * on port …: EADDRINUSE", seen in CI).
 */
const lately = new Map<number, number>();
const LATELY_MS = 5 * 60_000;
export const drawnLately = (port: number) =>
  Date.now() - (lately.get(port) ?? Number.NEGATIVE_INFINITY) < LATELY_MS;

/** Closes a server at once: every connection ends, a request under way too (an outage, for a store). */
export function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/**
 * A graceful stop for `server`, set up as it is created (it counts requests from then on), as a web host
 * stops: no new connections, the requests whose answers are not yet sent get `graceMs`, then every
 * connection ends (an idle kept-alive one, or one lingering after its answer, does not hold the stop).
 */
export function gracefulClose(server: Server): (graceMs: number) => Promise<void> {
  const underWay = new Set<ServerResponse>();
  let settled: (() => void) | undefined;
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    underWay.add(res);
    const done = () => {
      underWay.delete(res);
      if (underWay.size === 0) settled?.();
    };
    res.once('finish', done).once('close', done);
  });
  return async (graceMs) => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    if (underWay.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        settled = resolve;
        timer = setTimeout(resolve, graceMs);
      });
      clearTimeout(timer);
    }
    server.closeAllConnections();
    await closed;
  };
}

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body larger than ${limit} bytes`);
  }
}

/** Reads a request body, refusing (without buffering the rest) anything beyond `limit` bytes. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new BodyTooLargeError(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLargeError(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Largest request header block any emulator accepts (Node's default is 16 KiB; Azure front ends allow more). */
export const MAX_HEADER_SIZE = 64 * 1024;

/** What HTTP.sys, in front of Azure's HTTPS services, answers when the request headers are too large. */
const HEADERS_TOO_LONG =
  '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN""http://www.w3.org/TR/html4/strict.dtd">\r\n' +
  '<HTML><HEAD><TITLE>Bad Request</TITLE>\r\n' +
  '<META HTTP-EQUIV="Content-Type" Content="text/html; charset=us-ascii"></HEAD>\r\n' +
  '<BODY><h2>Bad Request - Request Too Long</h2>\r\n' +
  '<hr><p>HTTP Error 400. The size of the request headers is too long.</p>\r\n' +
  '</BODY></HTML>\r\n';

/**
 * Answers requests Node cannot parse (headers beyond MAX_HEADER_SIZE, malformed request lines) the way
 * Azure's front end does, instead of Node's bare 431/400, then closes the connection.
 */
function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const body = error.code === 'HPE_HEADER_OVERFLOW' ? HEADERS_TOO_LONG : '';
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: text/html; charset=us-ascii\r\nConnection: close\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
}

/**
 * An HTTPS server as every HTTPS emulator needs it: the stack's certificate, Azure's header allowance,
 * and malformed requests answered as Azure's front end answers them.
 */
export function createTlsServer(
  tls: TlsMaterial,
  options: ServerOptions = {},
  listener?: RequestListener,
): HttpsServer {
  const server = createHttpsServer(
    {
      key: tls.key,
      cert: tls.cert,
      maxHeaderSize: MAX_HEADER_SIZE,
      // Node's default, http/1.1 alone, ends the handshake of a client that offers only http/1.0
      // (`curl --http1.0`), which Azure's front ends serve.
      ALPNProtocols: ['http/1.1', 'http/1.0'],
      ...options,
    },
    listener,
  );
  answerClientErrors(server);
  return server;
}

/**
 * An error's message with its causes: fetch says only "fetch failed", its cause says why (a refused
 * connection, a certificate it does not trust …).
 */
export function reasonOf(error: unknown): string {
  const texts: string[] = [];
  for (let at: unknown = error; at instanceof Error && texts.length < 4; at = at.cause)
    texts.push(at.message);
  return texts.length ? texts.join(': ') : String(error);
}
