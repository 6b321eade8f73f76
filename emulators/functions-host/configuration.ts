/**
 * host.json as the runtime's configuration holds it (HostJsonFileConfigurationProvider): Json.NET's
 * JObject.Parse reads the file, each value is stored as text under its path in a dictionary whose keys
 * compare in any case, and .NET's configuration binder reads options from there, names in any case.
 * So two names differing only in case are one setting, the later in the file winning, with no error
 * (JObject keeps both properties, the dictionary one key); a name given twice keeps its last value, as
 * both JObject.Parse and JSON.parse do. A null value is read as none (the defaults apply). By this host's
 * choice, an object or array where a value is read is refused as a value no converter takes.
 */
import stripJsonComments from 'strip-json-comments';
import { parseNetInteger } from './http/routes.ts';
import { parseTimeSpan } from './timespan.ts';

interface Node {
  /** The value as the provider writes it (JValue.ToString: `true` → `True`); undefined for none. */
  value?: string;
  /** The JSON last written at this path, for the words of a refusal. */
  json?: unknown;
  /** Lower-cased name → the name as first written, and its node. */
  children: Map<string, { name: string; node: Node }>;
}

const isContainer = (json: unknown): json is Record<string, unknown> =>
  typeof json === 'object' && json !== null;

function write(node: Node, json: unknown): void {
  node.json = json;
  if (isContainer(json)) {
    // Arrays too: their elements are the children `0`, `1` …, as the provider writes them.
    for (const [name, value] of Object.entries(json)) {
      const key = name.toLowerCase();
      let child = node.children.get(key);
      if (!child) {
        child = { name, node: { children: new Map() } };
        node.children.set(key, child);
      }
      write(child.node, value);
    }
  } else if (json === null) node.value = undefined;
  else node.value = typeof json === 'boolean' ? (json ? 'True' : 'False') : String(json);
}

const INT32 = { min: -(2n ** 31n), max: 2n ** 31n - 1n };

/** One section of host.json, read as the binder reads it. */
export class HostSection {
  /**
   * @param name where it is in host.json, by the documented names (`extensions.eventHubs`), for messages
   * @param path the binder's path of it, by the options' .NET names (`AzureFunctionsJobHost:extensions:EventHubs`)
   */
  constructor(
    readonly name: string,
    readonly path: string,
    private readonly node: Node | undefined,
  ) {}

  /** The section `name` (documented camelCase: its .NET name is the same with a capital). */
  section(name: string): HostSection {
    const netName = name === 'extensions' ? name : name[0]?.toUpperCase() + name.slice(1);
    return new HostSection(
      this.name ? `${this.name}.${name}` : name,
      `${this.path}:${netName}`,
      this.node?.children.get(name.toLowerCase())?.node,
    );
  }

  /** Its value as text (an object or array as its JSON), undefined when it has none. */
  get value(): string | undefined {
    const json = this.node?.json;
    return this.node?.value ?? (isContainer(json) ? JSON.stringify(json) : undefined);
  }

  /** Its children, by their names as first written. */
  children(): [string, HostSection][] {
    return [...(this.node?.children.values() ?? [])].map(({ name, node }) => [
      name,
      new HostSection(`${this.name}.${name}`, `${this.path}:${name}`, node),
    ]);
  }

  /** The binder's words for a value its type's converter refuses (and the converter's, after them). */
  unconvertible(type: string, converterWords: string): Error {
    return new Error(
      `host.json: Failed to convert configuration value at '${this.path}' to type '${type}'. ${converterWords}`,
    );
  }

  /** An option's setter refusing the value, in its words. */
  refused(words: string): Error {
    return new Error(`host.json: ${this.name}: ${words}`);
  }

  /**
   * An Int32 as Int32Converter reads it; undefined when not given. With `atLeast`, a smaller value is
   * refused in its setter's words.
   */
  int(atLeast?: { min: number; words: string }): number | undefined {
    const text = this.value;
    if (text === undefined) return undefined;
    const value = parseNetInteger(text, INT32);
    if (value === undefined)
      throw this.unconvertible('System.Int32', `${text} is not a valid value for Int32. (Parameter 'value')`);
    if (atLeast && value < atLeast.min) throw this.refused(atLeast.words);
    return Number(value);
  }

  /**
   * An enum as EnumConverter reads it: a member's name in any case, or its number (its place in
   * `members`); undefined when not given. `netType` names the type in the refusal.
   */
  enumOf<T>(netType: string, members: readonly (readonly [name: string, value: T])[]): T | undefined {
    const text = this.value;
    if (text === undefined) return undefined;
    const key = text.trim().toLowerCase();
    const found = members.find(([name], i) => name.toLowerCase() === key || String(i) === key);
    if (!found)
      throw this.unconvertible(netType, `${text} is not a valid value for ${netType.split('.').at(-1)}.`);
    return found[1];
  }

  /** A TimeSpan in ms as TimeSpanConverter reads it (TimeSpan.Parse, sign allowed); undefined when not given. */
  timeSpan(): number | undefined {
    const text = this.value;
    if (text === undefined) return undefined;
    const negative = /^\s*-/.test(text);
    const ms = parseTimeSpan(negative ? text.replace('-', '') : text);
    if (ms === undefined)
      throw this.unconvertible('System.TimeSpan', `${text} is not a valid value for TimeSpan.`);
    return negative ? -ms : ms;
  }
}

/**
 * A settings file's JSON as Json.NET's JObject.Parse reads it (the runtime's host.json, Core Tools'
 * local.settings.json): comments (`//`, `/* … *\/`) and trailing commas are taken. Both become white
 * space, so a parse error's position still points into the file as written.
 */
export const parseJObject = (text: string): unknown =>
  JSON.parse(stripJsonComments(text, { trailingCommas: true }));

/** The root of host.json's configuration (`AzureFunctionsJobHost`), from the parsed file. */
export function hostConfiguration(json: unknown): HostSection {
  const root: Node = { children: new Map() };
  write(root, json);
  return new HostSection('', 'AzureFunctionsJobHost', root);
}
