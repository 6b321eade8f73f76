/** What the host's parts share: the app, its configuration, keys, logs and the invoker. */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import type { StackClock } from '../core/clock.ts';
import type { HostConfig } from './config.ts';
import { resolveSettingReferences, type Settings } from './connections.ts';
import type { AppRegistry, BindingInfo, RegisteredFunction } from './core-api.ts';
import { ordinalIgnoreCase } from './http/routes.ts';
import type { Invoker, TriggerInput } from './invoke.ts';
import type { KeyManager } from './keys.ts';
import type { FunctionLogs } from './logs.ts';

export interface Host {
  appDir: string;
  hostId: string;
  /** `http://127.0.0.1:<port>`, known once the server listens. */
  baseUrl: string;
  config: HostConfig;
  settings: Settings;
  registry: AppRegistry;
  invoker: Invoker;
  keys: KeyManager;
  logs: FunctionLogs;
  clock: StackClock;
  /** The app's own HTTP proxy when it enabled HTTP streaming (`app.setup({ enableHttpStream: true })`). */
  httpStreamUri: string | undefined;
  /** Blob endpoints whose store streams blob events (`triggers/blob-events.ts`) → the stream's URL. */
  blobEvents: Record<string, string>;
}

/** A running listener (timer schedule, blob scan, Event Hubs processor …). */
export interface Listener {
  stop(): Promise<void>;
}

/** One kind of trigger: how it listens, and how the admin API runs it by hand. */
export interface TriggerKind {
  /** The binding type, as registered (`timerTrigger`). */
  type: string;
  listen?(host: Host, fn: RegisteredFunction, trigger: TriggerBinding): Promise<Listener>;
  /** Input for `POST /admin/functions/<name>` with `{"input": …}`. */
  adminInput?(
    host: Host,
    fn: RegisteredFunction,
    trigger: TriggerBinding,
    input: string,
  ): Promise<TriggerInput>;
  /** An endpoint under `/runtime/webhooks/<name>` that delivers to this kind's functions. */
  webhook?: {
    name: string;
    serve(host: Host, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
  };
  /** What the kind's extension checks as it indexes the function (throws an `IndexingError`). */
  index?(settings: Settings, trigger: TriggerBinding): void;
}

/** An error the runtime raises as it indexes a function, with the assembly its log names as source. */
export class IndexingError extends Error {
  constructor(
    message: string,
    readonly source = 'Microsoft.Azure.WebJobs.Host',
  ) {
    super(message);
  }
}

export interface TriggerBinding extends BindingInfo {
  name: string;
}

export function triggerOf(fn: RegisteredFunction): TriggerBinding {
  const entry = Object.entries(fn.bindings).find(([, binding]) => /trigger$/i.test(binding.type));
  if (!entry) throw new Error(`function ${fn.name} has no trigger binding`);
  return { ...entry[1], name: entry[0] };
}

/** `compute(fn)`, worked out once per function: registrations never change once the host runs. */
export function perFunction<T>(compute: (fn: RegisteredFunction) => T): (fn: RegisteredFunction) => T {
  const known = new WeakMap<RegisteredFunction, T>();
  return (fn) => {
    if (!known.has(fn)) known.set(fn, compute(fn));
    return known.get(fn) as T;
  };
}

/**
 * The host id the runtime derives (ScriptHostIdProvider): the `AzureFunctionsWebHost__hostid` setting;
 * else on App Service the site's name, else (`func start`) the machine's name and a hash of the app's
 * path; lower case, at most 32 characters, no trailing '-'.
 */
export function defaultHostId(appDir: string, settings: Settings): string {
  const configured = settings.AzureFunctionsWebHost__hostid;
  if (configured) return configured.toLowerCase();
  // On App Service (WEBSITE_INSTANCE_ID set) the runtime derives it from the site's name.
  const site = settings.WEBSITE_INSTANCE_ID && settings.WEBSITE_SITE_NAME;
  const hash = createHash('sha256').update(appDir).digest().readUInt32BE(0);
  const id = site || `${hostname()}-${hash}`.toLowerCase().replace(/[^a-z0-9-]/g, '');
  return id.slice(0, 32).toLowerCase().replace(/-+$/, '');
}

/** `AzureWebJobs.<name>.Disabled` = true/1 turns a function off, as in Azure (setting names ignore case). */
export function isDisabled(settings: Settings, fn: RegisteredFunction): boolean {
  const key = `azurewebjobs.${fn.name}.disabled`.toLowerCase();
  const entry = Object.entries(settings).find(([name]) => name.toLowerCase() === key);
  return entry?.[1]?.toLowerCase() === 'true' || entry?.[1] === '1';
}

/** The runtime's function name rule (Utility.FunctionNameValidationRegex): `host` is reserved. */
const FUNCTION_NAME = /^[a-z][a-z0-9_-]{0,127}$/i;

const httpTriggerOf = (fn: RegisteredFunction) => {
  const trigger = triggerOf(fn);
  if (trigger.type.toLowerCase() !== 'httptrigger') return undefined;
  const route = typeof trigger.route === 'string' && trigger.route.trim() ? trigger.route : fn.name;
  const methods = Array.isArray(trigger.methods) ? trigger.methods.map((m) => String(m).toUpperCase()) : [];
  return { route: route.replace(/^\/+|\/+$/g, '').toLowerCase(), methods };
};

/**
 * The functions the runtime would put in error, each with its message, as it validates them at start:
 * an invalid name (WorkerFunctionMetadataProvider.ValidateMetadata, in registration order), then, in
 * the order of the names (any case: FunctionMetadataManager lists them so for ScriptHost.ValidateFunction),
 * an HTTP route in the runtime's own `admin`/`runtime` space, and an HTTP route (without the prefix, in
 * any case) that an earlier function has with a method in common. The runtime logs each and runs the others.
 */
export function functionErrors(functions: Iterable<RegisteredFunction>): Map<string, string> {
  const errors = new Map<string, string>();
  const http: [string, { route: string; methods: string[] }][] = [];
  const valid = [...functions].filter((fn) => {
    const ok = FUNCTION_NAME.test(fn.name) && fn.name.toLowerCase() !== 'host';
    if (!ok) errors.set(fn.name, `'${fn.name}' is not a valid function name.`);
    return ok;
  });
  for (const fn of valid.sort((a, b) => ordinalIgnoreCase(a.name, b.name))) {
    const trigger = httpTriggerOf(fn);
    if (!trigger) continue;
    if (trigger.route.startsWith('admin') || trigger.route.startsWith('runtime')) {
      errors.set(fn.name, 'The specified route conflicts with one or more built in routes.');
      continue;
    }
    const conflict = http.find(
      ([, other]) =>
        other.route === trigger.route &&
        (!other.methods.length ||
          !trigger.methods.length ||
          other.methods.some((m) => trigger.methods.includes(m))),
    );
    if (conflict) {
      errors.set(
        fn.name,
        `The route specified conflicts with the route defined by function '${conflict[0]}'.`,
      );
      continue;
    }
    http.push([fn.name, trigger]);
  }
  return errors;
}

/**
 * The functions whose trigger the runtime cannot index (WebJobs' FunctionIndexer; ScriptHost then lists
 * them in error), each with the runtime's flattened message: a `%name%` whose app setting is not set, or
 * what the trigger's extension refuses (a timer schedule that is neither NCRONTAB nor a TimeSpan). Their
 * listener never starts, and they are not retried.
 */
export function indexingErrors(
  functions: Iterable<RegisteredFunction>,
  kinds: Map<string, TriggerKind>,
  settings: Settings,
): Map<string, string> {
  const errors = new Map<string, string>();
  for (const fn of functions) {
    const trigger = triggerOf(fn);
    if (trigger.type.toLowerCase() === 'httptrigger') continue;
    try {
      for (const value of Object.values(trigger))
        if (typeof value === 'string') resolveSettingReferences(value, settings);
      kinds.get(trigger.type.toLowerCase())?.index?.(settings, trigger);
    } catch (error) {
      const source = error instanceof IndexingError ? error.source : 'Microsoft.Azure.WebJobs.Host';
      const message = (error as Error).message.replace(/([^.])$/, '$1.');
      errors.set(
        fn.name,
        `Microsoft.Azure.WebJobs.Host: Error indexing method 'Functions.${fn.name}'. ${source}: ${message}`,
      );
    }
  }
  return errors;
}
