/** Blob trigger path patterns: `{name}` placeholders within a blob name (`{name}.json`, `in/{year}/{file}`). */
import { escapeRegExp } from '../http/routes.ts';

export interface BlobPattern {
  /** The literal start of the pattern: the listing prefix. */
  prefix: string;
  /** The placeholders' values when `name` matches, else undefined. */
  match(name: string): Record<string, string> | undefined;
}

export function compilePattern(pattern: string): BlobPattern {
  const names: string[] = [];
  let source = '';
  let prefix: string | undefined;
  for (const part of pattern.split(/(\{[^{}]*\})/)) {
    const placeholder = /^\{([A-Za-z_]\w*)\}$/.exec(part);
    if (placeholder?.[1]) {
      prefix ??= source.replace(/\\(.)/g, '$1');
      names.push(placeholder[1]);
      // A placeholder matches any text, slashes included, as in the runtime's BlobPathSource.
      source += '(.+?)';
    } else if (part.includes('{') || part.includes('}')) {
      throw new Error(`blob path pattern "${pattern}": invalid placeholder`);
    } else {
      source += escapeRegExp(part);
    }
  }
  const regex = new RegExp(`^${source}$`);
  return {
    prefix: prefix ?? pattern,
    match(name) {
      const found = regex.exec(name);
      return found ? Object.fromEntries(names.map((key, i) => [key, found[i + 1] ?? ''])) : undefined;
    },
  };
}
