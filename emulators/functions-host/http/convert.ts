/** Between node:http and the worker's HTTP data (what the library turns into HttpRequest / from HttpResponse). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RegisteredFunction, RpcHttpCookie, RpcHttpData, RpcInvocationResponse } from '../core-api.ts';

export function toRpcHttp(
  req: IncomingMessage,
  body: Buffer,
  baseUrl: string,
  params: Record<string, string>,
): RpcHttpData {
  const headers: Record<string, string> = {};
  for (const name in req.headers) {
    const value = req.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  // The URL the client used (Host header) when it is a valid one; the bound address otherwise.
  let url = `http://${req.headers.host}${req.url}`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    url = `${baseUrl}${req.url}`;
    parsed = new URL(url);
  }
  const query = parsed.search ? rpcQuery(parsed.searchParams) : {};
  return { method: req.method, url, headers, query, params, body: body.length ? { bytes: body } : undefined };
}

/**
 * The query as the Functions host hands it to the worker, which the library's `request.query` is made
 * of: one value per name, names matched case-insensitively (the first spelling kept), repeated values
 * joined by commas (ASP.NET Core's StringValues), empty values left out.
 */
function rpcQuery(search: URLSearchParams): Record<string, string> {
  const values = new Map<string, { name: string; values: string[] }>();
  for (const [name, value] of search) {
    const entry = values.get(name.toLowerCase()) ?? { name, values: [] };
    entry.values.push(value);
    values.set(name.toLowerCase(), entry);
  }
  const query: Record<string, string> = {};
  for (const { name, values: all } of values.values()) {
    const joined = all.join(',');
    if (joined) query[name] = joined;
  }
  return query;
}

/** The name of a function's `http` output binding (usually `$return`), if it has one. */
export function httpOutputName(fn: RegisteredFunction): string | undefined {
  return Object.entries(fn.bindings).find(
    ([, b]) => b.direction === 'out' && b.type.toLowerCase() === 'http',
  )?.[0];
}

/** The HTTP output of an invocation: the value of the `http` output binding `name`, if it was set. */
export function httpOutput(
  name: string | undefined,
  response: RpcInvocationResponse | undefined,
): RpcHttpData | undefined {
  if (!name || !response) return undefined;
  const data =
    name === '$return' ? response.returnValue : response.outputData?.find((o) => o.name === name)?.data;
  return data?.http ?? undefined;
}

const sameSite: Record<string, string> = { lax: 'Lax', strict: 'Strict', explicitNone: 'None' };

function setCookie(cookie: RpcHttpCookie): string {
  const parts = [`${cookie.name ?? ''}=${cookie.value ?? ''}`];
  if (cookie.domain?.value) parts.push(`Domain=${cookie.domain.value}`);
  if (cookie.path?.value) parts.push(`Path=${cookie.path.value}`);
  const expires = cookie.expires?.value;
  if (expires?.seconds !== undefined && expires.seconds !== null) {
    parts.push(
      `Expires=${new Date(Number(expires.seconds) * 1000 + (expires.nanos ?? 0) / 1e6).toUTCString()}`,
    );
  }
  if (cookie.maxAge?.value !== undefined && cookie.maxAge.value !== null)
    parts.push(`Max-Age=${cookie.maxAge.value}`);
  if (cookie.secure?.value) parts.push('Secure');
  if (cookie.httpOnly?.value) parts.push('HttpOnly');
  const site = cookie.sameSite && sameSite[cookie.sameSite];
  if (site) parts.push(`SameSite=${site}`);
  return parts.join('; ');
}

/** Framing is ours to decide: never pass these through from the function. */
const hopByHop = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/** Writes the function's response; no HTTP output at all is 200 with an empty body, as the host answers. */
export function sendRpcHttp(res: ServerResponse, data: RpcHttpData | undefined, head: boolean): void {
  const bytes = data?.body?.bytes;
  // A view of the library's bytes, not a copy.
  const body = bytes
    ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    : Buffer.from(data?.body?.string ?? '');
  const number = Number(data?.statusCode ?? 200);
  const status = Number.isInteger(number) && number >= 100 && number <= 999 ? number : 500;
  // One object for writeHead rather than a setHeader call per header (the library's names are unique).
  const headers: Record<string, string | number | string[]> = {};
  for (const name in data?.headers) {
    if (!hopByHop.has(name.toLowerCase())) headers[name] = data.headers[name] as string;
  }
  if (data?.cookies?.length) {
    const cookies = data.cookies.map(setCookie);
    const set = headers['set-cookie'];
    headers['set-cookie'] = set === undefined ? cookies : [set as string, ...cookies];
  }
  // 204 and 304 carry no body, so no length either.
  const bodyless = status === 204 || status === 304;
  if (!bodyless) headers['content-length'] = body.length;
  res.writeHead(status, headers).end(head || bodyless ? undefined : body);
}
