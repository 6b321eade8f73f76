/**
 * multipart/form-data (RFC 7578), read as ASP.NET's form reader reads it. The platform's own parser
 * (`Response.formData()`) cannot be used for uploads: it refuses RFC 5987 `filename*=UTF-8''…`
 * parameters outright, and it silently drops a leading byte order mark from names, so the name
 * checked would not be the name the client sent.
 */

export interface FilePart {
  name: string;
  contentType: string;
  content: Buffer;
}

export interface MultipartForm {
  /** Text fields (name, value), in the body's order. */
  fields: [string, string][];
  files: FilePart[];
}

const CRLF = Buffer.from('\r\n');
const HEADERS_END = Buffer.from('\r\n\r\n');

/** `boundary` of a multipart/form-data content type (token or quoted), else undefined. */
function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/** Parameters of a Content-Disposition value, names lower-cased, quoted values unquoted. */
function dispositionParams(value: string): Map<string, string> {
  const params = new Map<string, string>();
  for (const match of value.matchAll(/;\s*([^\s=;]+)\s*=\s*(?:"([^"]*)"|([^;]*))/g)) {
    const name = (match[1] ?? '').toLowerCase();
    // Browsers percent-encode these three in quoted names (WHATWG's multipart encoding).
    const quoted = match[2]?.replace(/%0A|%0D|%22/gi, (code) => decodeURIComponent(code));
    if (!params.has(name)) params.set(name, quoted ?? (match[3] ?? '').trim());
  }
  return params;
}

/** An RFC 5987 ext-value (`UTF-8'lang'%E2%9C%93`); undefined when its charset or encoding is bad. */
function extValue(value: string): string | undefined {
  const match = /^([^']*)'[^']*'(.*)$/s.exec(value);
  if (!match) return undefined;
  const [, charset = '', encoded = ''] = match;
  try {
    if (charset.toLowerCase() === 'utf-8') return decodeURIComponent(encoded);
    if (charset.toLowerCase() === 'iso-8859-1')
      return encoded.replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
        String.fromCharCode(Number.parseInt(hex, 16)),
      );
  } catch {
    // Malformed percent-encoding: as if the parameter were absent.
  }
  return undefined;
}

/** Header name (lower-cased) → value, from a part's header block. */
function partHeaders(block: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

/** The form, or undefined when the body is not a well-formed multipart/form-data body. */
export function parseMultipart(body: Buffer, contentType: string): MultipartForm | undefined {
  const boundary = boundaryOf(contentType);
  if (!boundary) return undefined;
  const delimiter = Buffer.from(`--${boundary}`);
  const form: MultipartForm = { fields: [], files: [] };
  // The first delimiter opens the body (a preamble before it is ignored); each next one follows a CRLF.
  let at = body.subarray(0, delimiter.length).equals(delimiter)
    ? 0
    : body.indexOf(Buffer.concat([CRLF, delimiter]));
  if (at < 0) return undefined;
  if (at > 0) at += CRLF.length;
  for (;;) {
    at += delimiter.length;
    if (body.subarray(at, at + 2).toString('latin1') === '--') return form;
    while (body[at] === 0x20 || body[at] === 0x09) at++;
    if (!body.subarray(at, at + 2).equals(CRLF)) return undefined;
    at += CRLF.length;
    const headersEnd = body.indexOf(HEADERS_END, at - CRLF.length);
    if (headersEnd < 0) return undefined;
    const headers = partHeaders(body.subarray(at, headersEnd).toString('utf8'));
    const contentStart = headersEnd + HEADERS_END.length;
    // From the header block's own CRLF on, so an empty part whose delimiter follows at once is found too.
    const contentEnd = body.indexOf(Buffer.concat([CRLF, delimiter]), contentStart - CRLF.length);
    if (contentEnd < 0) return undefined;
    const disposition = headers.get('content-disposition') ?? '';
    if (!/^form-data\s*(;|$)/i.test(disposition)) return undefined;
    const params = dispositionParams(disposition);
    const name = params.get('name');
    if (name === undefined) return undefined;
    const encodedFileName = params.get('filename*');
    // ASP.NET takes filename* over filename; a part with neither (or both empty) is a text field.
    const fileName = (encodedFileName && extValue(encodedFileName)) || params.get('filename');
    const content = body.subarray(contentStart, Math.max(contentStart, contentEnd));
    if (fileName) {
      form.files.push({ name: fileName, contentType: headers.get('content-type') ?? '', content });
    } else {
      form.fields.push([name, content.toString('utf8')]);
    }
    at = contentEnd + CRLF.length;
  }
}
