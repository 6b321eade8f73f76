/**
 * host.json values overridden by app settings, as the runtime's configuration reads them: host.json is
 * flattened into keys under `AzureFunctionsJobHost` (HostJsonFileConfigurationSource), and the
 * environment variables provider, added after it (WebJobs' ConfigureWebJobs), wins over it. Its names
 * take `__` or `:` as the section separator and every key is compared in any case, so
 * `AzureFunctionsJobHost__extensions__http__routePrefix` replaces `extensions.http.routePrefix`.
 * A value arrives as text ("3", "true"), as host.json's own do once flattened; the reader of each option
 * converts it as .NET's binder does (configuration.ts).
 */

const PREFIX = 'azurefunctionsjobhost';

type Json = Record<string, unknown> | unknown[];

const isContainer = (value: unknown): value is Json => typeof value === 'object' && value !== null;
const isIndex = (segment: string) => /^\d+$/.test(segment);

/** The host.json path a setting names (after the prefix), or undefined for any other setting. */
function overridePath(name: string): string[] | undefined {
  const [prefix, ...path] = name.replaceAll('__', ':').split(':');
  if (prefix?.toLowerCase() !== PREFIX || path.length === 0 || path.includes('')) return undefined;
  return path;
}

/**
 * The key `segment` is held under in `container`: an existing key in any case (so the override replaces
 * it, never adds a second), an array's index, or a new one. An index past an array's end appends, as
 * the binder makes a list of whatever children there are, in order.
 */
function keyOf(container: Json, segment: string): string | number {
  if (Array.isArray(container))
    return isIndex(segment) ? Math.min(Number(segment), container.length) : container.length;
  const lower = segment.toLowerCase();
  return Object.keys(container).find((key) => key.toLowerCase() === lower) ?? segment;
}

/** Sets `value` at `path`, making the objects (or, before an index, arrays) on the way that are missing. */
function set(root: Record<string, unknown>, path: string[], value: string): void {
  let container: Json = root;
  for (const [i, segment] of path.entries()) {
    const key = keyOf(container, segment);
    const slots = container as Record<string | number, unknown>;
    const next = path[i + 1];
    if (next === undefined) {
      // A section with children keeps them: the binder reads an object's or array's children, not its value.
      if (!isContainer(slots[key])) slots[key] = value;
      return;
    }
    if (!isContainer(slots[key])) slots[key] = isIndex(next) ? [] : {};
    container = slots[key] as Json;
  }
}

/** Numbers compared as numbers, as ConfigurationKeyComparer orders a section's children. */
function compareNames(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true, sensitivity: 'base' });
}

/**
 * host.json's object with every `AzureFunctionsJobHost` setting of `settings` applied (a copy; the file's
 * object is left as read, for what the runtime checks on the file alone, such as `version`). Anything but
 * an object is returned as it is, for the host.json check to refuse.
 */
export function withHostJsonOverrides(host: unknown, settings: Record<string, string | undefined>): unknown {
  if (!isContainer(host) || Array.isArray(host)) return host;
  const overrides = Object.entries(settings)
    .map(([name, value]) => ({ path: overridePath(name), value }))
    .filter((o): o is { path: string[]; value: string } => !!o.path && o.value !== undefined)
    .sort((a, b) => compareNames(a.path.join(':'), b.path.join(':')));
  if (overrides.length === 0) return host;
  const merged = structuredClone(host) as Record<string, unknown>;
  for (const { path, value } of overrides) set(merged, path, value);
  return merged;
}
