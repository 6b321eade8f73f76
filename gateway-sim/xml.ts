/**
 * A small XML reader for policy documents that keeps each element's line, so that a refusal can name
 * it. APIM's policy editor accepts raw `<`, `>` and `"` inside `@(...)` / `@{...}` expressions in
 * attribute values and text (C# generics, string literals); so does this reader.
 */

export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  /** Text content (entities decoded), trimmed; '' when none. */
  text: string;
  line: number;
}

export class XmlError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
  }
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decode(text: string, line: number): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);|&/gi, (whole, name: string | undefined) => {
    if (name === undefined) throw new XmlError('a bare "&" (write &amp;)', line);
    if (name.startsWith('#x')) return String.fromCodePoint(Number.parseInt(name.slice(2), 16));
    if (name.startsWith('#')) return String.fromCodePoint(Number.parseInt(name.slice(1), 10));
    const value = ENTITIES[name];
    if (value === undefined) throw new XmlError(`unknown entity ${whole}`, line);
    return value;
  });
}

/** Parses one document with a single root element. */
export function parseXml(source: string): XmlElement {
  let pos = 0;
  let line = 1;
  const advance = (to: number) => {
    for (let i = pos; i < to; i++) if (source.charCodeAt(i) === 10) line++;
    pos = to;
  };
  const fail = (message: string): never => {
    throw new XmlError(message, line);
  };
  /** Skips to just past `end`, or fails naming what was left open. */
  const skipPast = (end: string, what: string) => {
    const at = source.indexOf(end, pos);
    if (at < 0) fail(`${what} is never closed`);
    advance(at + end.length);
  };
  /** Reads up to the closing quote, treating quotes inside an @(...) / @{...} expression as its own. */
  const readQuoted = (quote: string) => {
    const start = pos;
    let depth = 0;
    let inString = false;
    for (let i = pos; i < source.length; i++) {
      const c = source[i];
      if (depth > 0 && c === '"' && source[i - 1] !== '\\') inString = !inString;
      else if (inString) continue;
      else if (c === '@' && (source[i + 1] === '(' || source[i + 1] === '{') && depth === 0) {
        depth = 1;
        i++;
      } else if (depth > 0 && (c === '(' || c === '{')) depth++;
      else if (depth > 0 && (c === ')' || c === '}')) depth--;
      else if (depth === 0 && c === quote) {
        const raw = source.slice(start, i);
        advance(i + 1);
        return raw;
      }
    }
    return fail('an attribute value is never closed');
  };

  const skipMisc = () => {
    for (;;) {
      const ws = /^\s*/.exec(source.slice(pos))?.[0].length ?? 0;
      advance(pos + ws);
      if (source.startsWith('<?', pos)) skipPast('?>', 'a processing instruction');
      else if (source.startsWith('<!--', pos)) skipPast('-->', 'a comment');
      else return;
    }
  };

  const element = (): XmlElement => {
    const startLine = line;
    const name = /^<([A-Za-z_][\w.:-]*)/.exec(source.slice(pos))?.[1];
    if (!name) return fail('expected an element');
    advance(pos + 1 + name.length);
    const attributes: Record<string, string> = {};
    for (;;) {
      const ws = /^\s*/.exec(source.slice(pos))?.[0].length ?? 0;
      advance(pos + ws);
      if (source.startsWith('/>', pos)) {
        advance(pos + 2);
        return { name, attributes, children: [], text: '', line: startLine };
      }
      if (source[pos] === '>') {
        advance(pos + 1);
        break;
      }
      const attr = /^([A-Za-z_][\w.:-]*)\s*=\s*(["'])/.exec(source.slice(pos));
      if (!attr?.[1] || !attr[2]) return fail(`malformed attribute in <${name}>`);
      if (attr[1] in attributes) fail(`attribute ${attr[1]} repeated in <${name}>`);
      const attrLine = line;
      advance(pos + attr[0].length);
      attributes[attr[1]] = decode(readQuoted(attr[2]), attrLine);
    }
    const children: XmlElement[] = [];
    let text = '';
    for (;;) {
      if (pos >= source.length) fail(`<${name}> (line ${startLine}) is never closed`);
      if (source.startsWith('<!--', pos)) skipPast('-->', 'a comment');
      else if (source.startsWith('<![CDATA[', pos)) {
        const end = source.indexOf(']]>', pos);
        if (end < 0) fail('a CDATA section is never closed');
        text += source.slice(pos + 9, end);
        advance(end + 3);
      } else if (source.startsWith('</', pos)) {
        const close = /^<\/([A-Za-z_][\w.:-]*)\s*>/.exec(source.slice(pos));
        if (close?.[1] !== name) fail(`expected </${name}> to close the element of line ${startLine}`);
        advance(pos + (close?.[0].length ?? 0));
        return { name, attributes, children, text: text.trim(), line: startLine };
      } else if (source[pos] === '<' && source[pos + 1] !== '@') {
        children.push(element());
      } else {
        // Text up to the next tag; `@(...)`/`@{...}` may hold `<` (generics), read as a unit.
        const textLine = line;
        let end = pos;
        let depth = 0;
        while (end < source.length && (depth > 0 || source[end] !== '<')) {
          const c = source[end];
          if (c === '@' && (source[end + 1] === '(' || source[end + 1] === '{')) {
            depth++;
            end++;
          } else if (depth > 0 && (c === '(' || c === '{')) depth++;
          else if (depth > 0 && (c === ')' || c === '}')) depth--;
          end++;
        }
        text += decode(source.slice(pos, end), textLine);
        advance(end);
      }
    }
  };

  skipMisc();
  const root = element();
  skipMisc();
  if (pos < source.length) fail('content after the root element');
  return root;
}
