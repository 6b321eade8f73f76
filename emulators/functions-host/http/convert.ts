/** Between node:http and the worker's HTTP data (what the library turns into HttpRequest / from HttpResponse). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RegisteredFunction, RpcHttpCookie, RpcHttpData, RpcInvocationResponse } from '../core-api.ts';
import { decodeRequestPath, escapeDataString, pathToUriComponent } from './request-path.ts';

export function toRpcHttp(
  req: IncomingMessage,
  body: Buffer,
  baseUrl: string,
  params: Record<string, string>,
): RpcHttpData {
  const headers = rpcHeaders(req);
  // The URL the client used (Host header) when it is a valid one; the bound address otherwise.
  let parsed: URL;
  try {
    parsed = new URL(`http://${req.headers.host}${req.url}`);
  } catch {
    parsed = new URL(`${baseUrl}${req.url}`);
  }
  // As the host writes it: scheme://Host + Request.Path (decoded, then escaped by PathString) + the query.
  const url = `${parsed.origin}${pathToUriComponent(decodeRequestPath(parsed.pathname))}${parsed.search}`;
  const query = parsed.search ? rpcQuery(parsed.searchParams) : {};
  return { method: req.method, url, headers, query, params, body: body.length ? { bytes: body } : undefined };
}

/**
 * Every line of a repeated header, joined as ASP.NET Core's StringValues.ToString() joins them (a comma,
 * no space); req.headers would join with ', ' and keep only the first user-agent, host …
 */
function rpcHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  const raw = req.rawHeaders;
  // From the raw lines: cheaper than req.headersDistinct, which builds an array per name.
  for (let at = 0; at < raw.length; at += 2) {
    const name = (raw[at] as string).toLowerCase();
    const value = raw[at + 1] as string;
    headers[name] = Object.hasOwn(headers, name) ? `${headers[name]},${value}` : value;
  }
  return headers;
}

/**
 * An HTTP trigger's binding data (what `{name}` in another binding's path can name), as the HTTP
 * extension's GetRequestBindingData builds it, names in any case, a later source winning: the
 * properties of a JSON object body (one with a Content-Length; arrays and nulls left out), each query parameter but `code`, the
 * route values; then `query` and `headers` as objects, unless a name above took them.
 */
export function httpBindingData(
  req: IncomingMessage,
  url: URL,
  params: Record<string, string>,
  body: Buffer | undefined,
): Record<string, unknown> {
  const data = new Map<string, [string, unknown]>();
  const set = (name: string, value: unknown) => data.set(name.toLowerCase(), [name, value]);
  let parsed: unknown;
  try {
    parsed = body?.length ? JSON.parse(body.toString('utf8')) : undefined;
  } catch {
    // Not JSON: the body gives no binding data.
  }
  if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
    for (const [name, value] of Object.entries(parsed))
      if (value !== null && !Array.isArray(value)) set(name, value);
  const query = rpcQuery(url.searchParams);
  for (const [name, value] of Object.entries(query)) if (name.toLowerCase() !== 'code') set(name, value);
  for (const [name, value] of Object.entries(params)) set(name, value);
  if (!data.has('query')) set('query', query);
  if (!data.has('headers')) set('headers', rpcHeaders(req));
  return Object.fromEntries(data.values());
}

/**
 * The query as the Functions host hands it to the worker, which the library's `request.query` is made
 * of: one value per name, names matched case-insensitively (the first spelling kept), repeated values
 * joined by commas (ASP.NET Core's StringValues). Empty values are kept: the Node worker declares
 * UseNullableValueDictionaryForHttp, so the host sends its nullable query, which drops none.
 */
function rpcQuery(search: URLSearchParams): Record<string, string> {
  const values = new Map<string, { name: string; values: string[] }>();
  for (const [name, value] of search) {
    const entry = values.get(name.toLowerCase()) ?? { name, values: [] };
    entry.values.push(value);
    values.set(name.toLowerCase(), entry);
  }
  const query: Record<string, string> = {};
  for (const { name, values: all } of values.values()) query[name] = all.join(',');
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

const sameSite: Record<string, string> = { lax: 'lax', strict: 'strict', explicitNone: 'none' };
/** RFC 7230 token: what ASP.NET Core's SetCookieHeaderValue accepts as a cookie name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]*$/;
/** TimeSpan.MaxValue in seconds: a larger max-age overflows the host's TimeSpan.FromSeconds. */
const MAX_TIMESPAN_SECONDS = 922_337_203_685;

/**
 * A Set-Cookie line as the host writes it: `Response.Cookies.Append(name, value, CookieOptions)`, so
 * ASP.NET Core's SetCookieHeaderValue form (lower-case attributes in its order, the value escaped,
 * `path=/` by CookieOptions' default). What it refuses (a name that is no token, a negative or
 * out-of-range max-age) fails the response, as the exception fails it in the host.
 */
function setCookie(cookie: RpcHttpCookie): string {
  const name = cookie.name ?? '';
  if (!TOKEN.test(name)) throw new Error(`Invalid cookie name: ${name}`);
  const parts = [`${name}=${escapeDataString(cookie.value ?? '')}`];
  const expires = cookie.expires?.value;
  if (expires?.seconds !== undefined && expires.seconds !== null) {
    parts.push(
      `expires=${new Date(Number(expires.seconds) * 1000 + (expires.nanos ?? 0) / 1e6).toUTCString()}`,
    );
  }
  const maxAge = cookie.maxAge?.value;
  if (maxAge !== undefined && maxAge !== null) {
    // (long)TimeSpan.TotalSeconds: truncated toward zero.
    const seconds = Math.trunc(maxAge);
    if (!(Math.abs(maxAge) <= MAX_TIMESPAN_SECONDS) || seconds < 0)
      throw new Error(`cookie ${name}: max-age ${maxAge} is not a non-negative number of seconds`);
    parts.push(`max-age=${seconds}`);
  }
  const domain = cookie.domain?.value;
  if (typeof domain === 'string') parts.push(`domain=${domain}`);
  const path = cookie.path?.value;
  parts.push(`path=${typeof path === 'string' ? path : '/'}`);
  if (cookie.secure?.value) parts.push('secure');
  const site = cookie.sameSite && sameSite[cookie.sameSite];
  if (site) parts.push(`samesite=${site}`);
  if (cookie.httpOnly?.value) parts.push('httponly');
  return parts.join('; ');
}

/**
 * Kestrel writes header values in ASCII only (tab and 0x20-0x7E): it throws at any other character, so
 * the host answers 500. Node would write a Latin-1 `é` as is.
 */
function checkHeaderValue(value: string): void {
  const invalid = /[^\t\x20-\x7e]/.exec(value);
  if (invalid) {
    const code = invalid[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
    throw new Error(`Invalid non-ASCII or control character in header: 0x${code}`);
  }
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
    if (hopByHop.has(name.toLowerCase())) continue;
    const value = data.headers[name] as string;
    checkHeaderValue(String(value));
    headers[name] = value;
  }
  if (data?.cookies?.length) {
    const cookies = data.cookies.map(setCookie);
    for (const cookie of cookies) checkHeaderValue(cookie);
    const set = headers['set-cookie'];
    headers['set-cookie'] = set === undefined ? cookies : [set as string, ...cookies];
  }
  // 204 and 304 carry no body, so no length either.
  const bodyless = status === 204 || status === 304;
  if (!bodyless) headers['content-length'] = body.length;
  res.writeHead(status, headers).end(head || bodyless ? undefined : body);
}
