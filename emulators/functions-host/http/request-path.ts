/**
 * The request path as the host's routes see it: decoded as Kestrel decodes it (ASP.NET Core's
 * UrlDecoder), then cut into segments as ASP.NET's PathTokenizer cuts it.
 */

/** A request target Kestrel refuses before any routing (a path with `%00`, an absolute form that is no URL): 400. */
export class BadRequestTargetError extends Error {}

const PERCENT = 0x25;

function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/** The byte `%XX` at `at` stands for, or -1: not a valid escape, or `%2F`, which Kestrel leaves as is. */
function escapedByte(bytes: Buffer, at: number): number {
  if (bytes[at] !== PERCENT) return -1;
  const high = hexValue(bytes[at + 1]);
  const low = hexValue(bytes[at + 2]);
  if (high < 0 || low < 0) return -1;
  const value = (high << 4) | low;
  return value === 0x2f ? -1 : value;
}

/** How many bytes a UTF-8 character that starts with `first` (0x80 or more) has; 0 if none does. */
function utf8Length(first: number): number {
  if ((first & 0xe0) === 0xc0) return 2;
  if ((first & 0xf0) === 0xe0) return 3;
  return (first & 0xf8) === 0xf0 ? 4 : 0;
}

/**
 * The UTF-8 character the escapes from `start` encode, and where the scan stopped. Undecoded (no
 * bytes), what lies between `start` and the stop is copied as sent, as UrlDecoder.DecodeCore does.
 */
function decodeAt(bytes: Buffer, start: number): { decoded?: number[]; end: number } {
  const first = escapedByte(bytes, start);
  if (first < 0) return { end: start + 1 };
  if (first === 0) throw new BadRequestTargetError('The path contains null characters.');
  if (first < 0x80) return { decoded: [first], end: start + 3 };
  const length = utf8Length(first);
  if (!length) return { end: start + 3 };
  const minimum = [0, 0, 0x80, 0x800, 0x10000][length] ?? 0;
  let bits = first & (0xff >> (length + 1));
  const decoded = [first];
  let end = start + 3;
  for (let remaining = length - 1; remaining > 0; remaining--) {
    const next = escapedByte(bytes, end);
    if (next < 0 || (next & 0xc0) !== 0x80) return { end };
    bits = (bits << 6) | (next & 0x3f);
    // A UTF-16 surrogate, or beyond U+10FFFF: not UTF-8.
    if ((remaining === 2 && bits >= 0x360 && bits <= 0x37f) || (remaining === 3 && bits >= 0x110))
      return { end };
    decoded.push(next);
    end += 3;
  }
  return bits < minimum ? { end } : { decoded, end };
}

/**
 * Kestrel's path decoding: each escape that encodes a UTF-8 character is decoded, except `%2F`, which
 * stays `%2F` (so it never splits a segment); an escape that does not is left as sent; `%00` is refused.
 */
export function decodeRequestPath(path: string): string {
  if (!path.includes('%')) return path;
  const bytes = Buffer.from(path, 'latin1');
  const out: number[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (bytes[at] !== PERCENT) {
      out.push(bytes[at++] as number);
      continue;
    }
    const { decoded, end } = decodeAt(bytes, at);
    out.push(...(decoded ?? bytes.subarray(at, end)));
    at = end;
  }
  return Buffer.from(out).toString('utf8');
}

export interface PathSegments {
  segments: string[];
  /** The path ends with a slash after its last segment, which routing ignores but a catch-all keeps. */
  trailingSlash: boolean;
}

/** ASP.NET's PathTokenizer: the segments between slashes, empty ones included, a trailing slash not. */
export function pathSegments(path: string): PathSegments {
  if (path.length <= 1) return { segments: [], trailingSlash: false };
  const trailingSlash = path.endsWith('/');
  return { segments: path.slice(1, trailingSlash ? -1 : undefined).split('/'), trailingSlash };
}

/** The characters ASP.NET's PathString writes unescaped: RFC 3986's pchar and `/`, ASCII only. */
const PATH_CHAR = /[A-Za-z0-9\-._~!$&'()*+,;=:@/]/;
const PLAIN_PATH = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/;

/**
 * .NET's Uri.EscapeDataString: everything but RFC 3986's unreserved characters, percent-encoded as
 * UTF-8 (a lone surrogate as U+FFFD, where encodeURIComponent would throw).
 */
export const escapeDataString = (text: string) =>
  encodeURIComponent(text.replace(/\p{Cs}/gu, '\uFFFD')).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );

/**
 * A decoded path as ASP.NET's PathString.ToUriComponent writes it, which is the path of the URL the
 * host gives the function: what is no path character is escaped (UTF-8), a `%XX` already there kept.
 */
export function pathToUriComponent(path: string): string {
  // Most paths need nothing escaped: spare them a callback per character.
  if (PLAIN_PATH.test(path)) return path;
  return path.replace(/%[0-9A-Fa-f]{2}|[\s\S]/gu, (part) =>
    part.length === 3 || PATH_CHAR.test(part) ? part : escapeDataString(part),
  );
}
