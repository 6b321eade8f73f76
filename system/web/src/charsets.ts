/**
 * A request body's charset as ASP.NET decides it: the first `charset` parameter (MediaTypeHeaderValue), as
 * .NET's Encoding.GetEncoding names it without a code-pages provider (none is registered by default).
 * body-parser then reads the body in the encoding decided here, named alone in the Content-Type it sees,
 * so that it never refuses a charset in its own words nor reads a later `charset` parameter.
 */
import type { Request } from 'express';

/** Each encoding .NET knows by default, in body-parser's (iconv-lite's) name, with the names .NET takes for it. */
const ENCODINGS: Record<string, string[]> = {
  'utf-8': ['utf-8', 'unicode-1-1-utf-8', 'unicode-2-0-utf-8', 'x-unicode-1-1-utf-8', 'x-unicode-2-0-utf-8'],
  'utf-7': [
    'utf-7',
    'csunicode11utf7',
    'unicode-1-1-utf-7',
    'unicode-2-0-utf-7',
    'x-unicode-1-1-utf-7',
    'x-unicode-2-0-utf-7',
  ],
  'utf-16le': ['utf-16', 'utf-16le', 'unicode', 'ucs-2', 'iso-10646-ucs-2'],
  'utf-16be': ['utf-16be', 'unicodefffe'],
  'utf-32le': ['utf-32', 'utf-32le'],
  'utf-32be': ['utf-32be'],
  'us-ascii': [
    'us-ascii',
    'us',
    'ascii',
    'ansi_x3.4-1968',
    'ansi_x3.4-1986',
    'cp367',
    'csascii',
    'ibm367',
    'iso-ir-6',
    'iso646-us',
    'iso_646.irv:1991',
  ],
  'iso-8859-1': [
    'iso-8859-1',
    'latin1',
    'l1',
    'iso8859-1',
    'iso_8859-1',
    'iso_8859-1:1987',
    'iso-ir-100',
    'cp819',
    'ibm819',
    'csisolatin1',
  ],
};
const BY_NAME = new Map(
  Object.entries(ENCODINGS).flatMap(([encoding, names]) => names.map((n) => [n, encoding])),
);

/**
 * The encoding the request's Content-Type names: `null` when it names no charset, undefined when .NET does
 * not know the one it names.
 */
export function namedEncoding(req: Request): string | null | undefined {
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(req.get('content-type') ?? '')?.[1];
  return charset === undefined ? null : BY_NAME.get(charset.toLowerCase());
}

/** Has body-parser read the body in `encoding`, whatever else the Content-Type's parameters say. */
export function readAs(req: Request, encoding: string): void {
  const mediaType = (req.get('content-type') ?? '').split(';')[0]?.trim();
  req.headers['content-type'] = `${mediaType}; charset=${encoding}`;
}
