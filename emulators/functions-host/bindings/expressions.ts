/**
 * Binding expressions in binding properties (paths, ids, queries …), as the WebJobs SDK resolves them:
 * `%AppSetting%`, `{rand-guid}`, `{DateTime}` / `{DateTime:yyyy-MM-dd}`, and trigger binding data such as
 * `{name}` or `{query.id}` (case-insensitive, dotted paths into objects).
 */
import { randomUUID } from 'node:crypto';
import { resolveSettingReferences, type Settings } from '../connections.ts';

const pad = (value: number, width = 2) => String(value).padStart(width, '0');

/** The subset of .NET custom date formats paths use; `{DateTime}` alone is `yyyy-MM-ddTHH-mm-ssZ`. */
function formatDate(date: Date, format = "yyyy-MM-dd'T'HH-mm-ss'Z'"): string {
  const tokens: Record<string, string> = {
    yyyy: String(date.getUTCFullYear()),
    MM: pad(date.getUTCMonth() + 1),
    dd: pad(date.getUTCDate()),
    HH: pad(date.getUTCHours()),
    mm: pad(date.getUTCMinutes()),
    ss: pad(date.getUTCSeconds()),
    fff: pad(date.getUTCMilliseconds(), 3),
  };
  return format.replace(
    /'([^']*)'|yyyy|MM|dd|HH|mm|ss|fff/g,
    (token, quoted?: string) => quoted ?? tokens[token] ?? token,
  );
}

/** A GUID as .NET's Guid.ToString(format) writes it (`{rand-guid:N}`): D (default), N, B or P. */
function formatGuid(guid: string, format = 'D'): string {
  switch (format.toUpperCase()) {
    case 'D':
      return guid;
    case 'N':
      return guid.replaceAll('-', '');
    case 'B':
      return `{${guid}}`;
    case 'P':
      return `(${guid})`;
    default:
      throw new Error(`Format string can be only "D", "d", "N", "n", "P", "p", "B", "b", "X" or "x".`);
  }
}

function lookup(data: Record<string, unknown>, path: string): unknown {
  let current: unknown = data;
  for (const part of path.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined;
    const key = Object.keys(current).find((k) => k.toLowerCase() === part.toLowerCase());
    current = key === undefined ? undefined : (current as Record<string, unknown>)[key];
  }
  return current;
}

/** The value of a trigger binding data expression such as `name` or `query.id`; throws when there is none. */
function dataValue(bindingData: Record<string, unknown>, name: string): string | number | boolean {
  const value = lookup(bindingData, name);
  if (value === undefined || value === null || typeof value === 'object') {
    throw new Error(`No value for named parameter '${name}'.`);
  }
  return value as string | number | boolean;
}

export function resolveExpression(
  template: string,
  bindingData: Record<string, unknown>,
  settings: Settings,
  now: Date,
): string {
  return resolveSettingReferences(template, settings).replace(/\{([^{}]+)\}/g, (_, expression: string) => {
    const [name = '', format] = expression.split(/:(.*)/s);
    if (name.toLowerCase() === 'rand-guid') return formatGuid(randomUUID(), format);
    if (name.toLowerCase() === 'datetime') return formatDate(now, format);
    return String(dataValue(bindingData, name));
  });
}

/**
 * A Cosmos DB `sqlQuery` as the extension runs it: `%Setting%` resolved, and each `{expression}` made a
 * SQL parameter (`{title}` → `@title` = its value), so a value can never change the query's meaning.
 */
export function sqlQuery(
  template: string,
  bindingData: Record<string, unknown>,
  settings: Settings,
): { query: string; parameters: { name: string; value: string | number | boolean }[] } {
  const parameters = new Map<string, string | number | boolean>();
  const query = resolveSettingReferences(template, settings).replace(
    /\{([^{}]+)\}/g,
    (_, expression: string) => {
      const name = `@${expression.replace(/\W/g, '_')}`;
      parameters.set(name, dataValue(bindingData, expression));
      return name;
    },
  );
  return { query, parameters: [...parameters].map(([name, value]) => ({ name, value })) };
}

/** A binding's property resolver: its expressions resolved against the (lazily built) binding data; an absent property stays undefined. */
export const propertyResolver =
  (bindingData: () => Record<string, unknown>, settings: Settings, now: () => Date) => (template: unknown) =>
    template === undefined || template === null
      ? undefined
      : resolveExpression(String(template), bindingData(), settings, now());
