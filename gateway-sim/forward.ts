/**
 * The backend call of forward-request: the request body streamed to the backend as it arrives, the
 * backend's answer handed back unread (so it streams on to the caller), hop-by-hop headers dropped both
 * ways, and a deadline that ends the call rather than letting the caller hang.
 */
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** RFC 9110 §7.6.1: meaningful only for one connection, never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Headers minus hop-by-hop ones (including those the Connection header names). */
export function endToEnd(headers: IncomingMessage['headers']): Record<string, string | string[]> {
  // Made on every call, both ways: no list of names unless a Connection header names some.
  const named =
    headers.connection === undefined
      ? undefined
      : String(headers.connection)
          .split(',')
          .map((name) => name.trim().toLowerCase());
  const kept: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name) && !named?.includes(name)) kept[name] = value;
  }
  return kept;
}

export class BackendError extends Error {
  constructor(
    readonly kind: 'unreachable' | 'timeout',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Connections to backends are reused, as APIM does, and closed after a minute idle (.NET's
 * PooledConnectionIdleTimeout) or a second before a backend's `Keep-Alive: timeout=` — which node:http
 * heeds only in an agent given a timeout: without one, it kept a connection until the backend closed it,
 * and a request could cross that close.
 */
const IDLE_MS = 60_000;
const agents = {
  'http:': new HttpAgent({ keepAlive: true, timeout: IDLE_MS }),
  'https:': new HttpsAgent({ keepAlive: true, timeout: IDLE_MS }),
};

export function callBackend(options: {
  url: URL;
  /** The query as it is to be sent (without `?`): URL's own search would be re-encoded. */
  search: string;
  method: string;
  headers: OutgoingHttpHeaders;
  body: IncomingMessage;
  timeoutMs: number;
  /** Told of each chunk of the request body as it goes on (bandwidth quotas count them). */
  onBodyBytes?: (bytes: number) => void;
}): Promise<IncomingMessage> {
  const { url, timeoutMs } = options;
  const protocol = url.protocol as keyof typeof agents;
  if (!agents[protocol])
    return Promise.reject(new BackendError('unreachable', `unsupported backend scheme ${url.protocol}`));
  const send = protocol === 'https:' ? httpsRequest : httpRequest;
  const { body } = options;
  // Only a request without a body can go again: a body is read (and gone) as it is forwarded.
  const length = body.headers['content-length'];
  const resendable = (length === undefined || length === '0') && !body.headers['transfer-encoding'];
  return new Promise((resolve, reject) => {
    let outgoing: ClientRequest;
    const attempt = (again: boolean) => {
      const request = send(url, {
        path: `${url.pathname}${options.search ? `?${options.search}` : ''}`,
        method: options.method,
        headers: { ...options.headers, host: url.host },
        agent: agents[protocol],
      });
      outgoing = request;
      let answered = false;
      request.on('response', (response) => {
        answered = true;
        clearTimeout(timer);
        resolve(response);
      });
      request.on('error', (error) => {
        // A kept-alive connection the backend closed as it was reused, before any answer: the backend
        // never took the request, so it goes again on another connection (as .NET's HttpClient does).
        if (request.reusedSocket && !answered && resendable && !(error instanceof BackendError))
          return attempt(true);
        clearTimeout(timer);
        reject(error instanceof BackendError ? error : new BackendError('unreachable', error.message));
      });
      if (again) request.end();
      else {
        // Attached with the pipe, in the same tick: no chunk flows before both listen.
        if (options.onBodyBytes) body.on('data', (chunk: Buffer) => options.onBodyBytes?.(chunk.length));
        body.pipe(request);
      }
    };
    const timer = setTimeout(() => {
      outgoing.destroy(new BackendError('timeout', `no answer within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    attempt(false);
    // A caller that leaves mid-body ends the backend call too, instead of leaving it waiting.
    const left = () => {
      if (!body.complete) outgoing.destroy(new BackendError('unreachable', 'the caller left mid-request'));
    };
    if (body.destroyed) left();
    else body.on('close', left);
  });
}
