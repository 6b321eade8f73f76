/** Blob trigger path patterns: `{name}` placeholders within a blob name (`{name}.json`, `in/{year}/{file}`). */
import { IndexingError } from '../host.ts';
import { escapeRegExp } from '../http/routes.ts';

export interface BlobPattern {
  /** The literal start of the pattern: the listing prefix. */
  prefix: string;
  /** The placeholders' values when `name` matches, else undefined. */
  match(name: string): Record<string, string> | undefined;
}

export function compilePattern(pattern: string): BlobPattern {
  // A container alone: every blob in it.
  if (pattern === '') return { prefix: '', match: () => ({}) };
  const names: string[] = [];
  let source = '';
  let prefix: string | undefined;
  for (const part of pattern.split(/(\{[^{}]*\})/)) {
    const placeholder = /^\{([A-Za-z_]\w*)\}$/.exec(part);
    if (placeholder?.[1]) {
      prefix ??= source.replace(/\\(.)/g, '$1');
      names.push(placeholder[1]);
      // As the runtime's BindingTemplateSource captures a placeholder: `(?<name>.*)`, any text (slashes
      // included, none at all too), as much as the rest allows: `{name}.{ext}` splits at the last dot.
      source += '(.*)';
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

/**
 * A blob trigger's path (`%Setting%`s resolved) as the storage extension's BlobPathSource reads it: a
 * container alone, or `container/pattern`, with no placeholder in the container; its words otherwise.
 */
export function triggerPath(path: string): { container: string; pattern: string } {
  const slash = path.indexOf('/');
  const container = slash < 0 ? path : path.slice(0, slash);
  const invalid = (why: string) =>
    new IndexingError(
      `Invalid blob trigger path '${path}'. ${why}`,
      'Microsoft.Azure.WebJobs.Extensions.Storage.Blobs',
    );
  if ((slash >= 0 && (slash === 0 || slash === path.length - 1)) || container.includes('\\'))
    throw invalid("Paths must be in the format 'container/blob'.");
  if (container.includes('{')) throw invalid('Container paths cannot contain {resolve} tokens.');
  return { container, pattern: slash < 0 ? '' : path.slice(slash + 1) };
}
