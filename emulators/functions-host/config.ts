/** The app's configuration: `host.json` and the app settings (environment + `local.settings.json`). */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { readJsonIfExists } from '../core/files.ts';
import type { Settings } from './connections.ts';
import { type ClientRetryOptions, clientRetryOptions } from './eventhub-retry.ts';
import { parseNetInteger } from './http/routes.ts';
import { parseTimeSpan } from './timespan.ts';

const logLevel = z.enum(['Trace', 'Debug', 'Information', 'Warning', 'Error', 'Critical', 'None']);
export type HostLogLevel = z.infer<typeof logLevel>;

/** The parts of host.json (schema version 2.0) this host honours; anything else is accepted and ignored. */
const hostJsonSchema = z.looseObject({
  version: z.unknown().optional(),
  functionTimeout: z.string().optional(),
  logging: z.looseObject({ logLevel: z.record(z.string(), logLevel).optional() }).optional(),
  extensions: z
    .looseObject({
      http: z.looseObject({ routePrefix: z.string().optional() }).optional(),
      // The storage extension's BlobsOptions (5.x, extension bundle 4): its setters' checks, in its words.
      blobs: z
        .looseObject({
          maxDegreeOfParallelism: z
            .number()
            .int()
            .min(1, "Specified argument was out of the range of valid values. (Parameter 'value')")
            .optional(),
          poisonBlobThreshold: z
            .number()
            .int()
            .min(1, "PoisonBlobThreshold must not be less than 1. (Parameter 'value')")
            .optional(),
        })
        .optional(),
      eventHubs: z
        .looseObject({
          maxEventBatchSize: z.number().int().positive().optional(),
          maxBatchSize: z.number().int().positive().optional(),
          batchCheckpointFrequency: z.number().int().positive().optional(),
          initialOffsetOptions: z
            .looseObject({ type: z.string().optional(), enqueuedTimeUtc: z.string().optional() })
            .optional(),
          clientRetryOptions: z.record(z.string(), z.unknown()).optional(),
        })
        .optional(),
    })
    .optional(),
});

/**
 * Where a partition without a checkpoint starts (`extensions.eventHubs.initialOffsetOptions`): the
 * extension's OffsetType, FromStart by default; a time for FromEnqueuedTime.
 */
export type InitialOffset = { from: 'start' } | { from: 'end' } | { from: 'time'; enqueuedOn: Date };

function initialOffset(options: { type?: string; enqueuedTimeUtc?: string } | undefined): InitialOffset {
  // .NET's configuration binder reads an enum's name in any case.
  const type = (options?.type ?? 'FromStart').toLowerCase();
  if (type === 'fromstart') return { from: 'start' };
  if (type === 'fromend') return { from: 'end' };
  if (type !== 'fromenqueuedtime')
    throw new Error(
      `host.json: extensions.eventHubs.initialOffsetOptions.type must be FromStart, FromEnd or FromEnqueuedTime, not '${options?.type}'`,
    );
  const enqueuedOn = new Date(options?.enqueuedTimeUtc ?? Number.NaN);
  if (Number.isNaN(enqueuedOn.getTime()))
    throw new Error(
      `host.json: extensions.eventHubs.initialOffsetOptions.enqueuedTimeUtc must be a time for FromEnqueuedTime, not '${options?.enqueuedTimeUtc ?? ''}'`,
    );
  return { from: 'time', enqueuedOn };
}

export interface HostConfig {
  routePrefix: string;
  /** Undefined means no limit (`"functionTimeout": "-1"`). */
  functionTimeoutMs: number | undefined;
  /** Category → level, compared case-insensitively; `default` applies to the rest. */
  logLevels: Record<string, HostLogLevel>;
  /**
   * The blob trigger's `extensions.blobs` (BlobsOptions): failed tries of a blob before its poison message
   * (`poisonBlobThreshold`, 5), and how many blobs all blob triggers run at once
   * (`maxDegreeOfParallelism`, 8 × the processors, or 8 on Consumption, as SkuUtility counts them). The
   * extension builds its queue's options from these alone: `extensions.queues` does not apply.
   */
  blobs: { poisonBlobThreshold: number; maxDegreeOfParallelism: number };
  /** `clientRetry`: how the extension's clients retry (`clientRetryOptions`, see eventhub-retry.ts). */
  eventHubs: {
    maxBatchSize: number;
    checkpointFrequency: number;
    initialOffset: InitialOffset;
    clientRetry: ClientRetryOptions;
  };
  /**
   * local.settings.json `Host.MaxRequestBodySize`: the app promises that none of its HTTP functions
   * accepts a larger body, so the host reads no more than this + 1 byte (see http/body.ts).
   */
  maxRequestBodySize: number | undefined;
  /** Bytes: a larger request body is refused (413); FUNCTIONS_REQUEST_BODY_SIZE_LIMIT, else 100 MB. */
  requestBodyLimit: number;
}

const isConsumption = (sku: string | undefined) => sku?.toLowerCase() === 'dynamic';

/**
 * functionTimeout's bounds by plan (ScriptJobHostOptionsSetup): on Consumption (WEBSITE_SKU Dynamic)
 * 5 min by default and at most 10, so `-1` (TimeSpan -1 day) is refused; on other plans 30 min by
 * default, unbounded, and `-1` means none.
 */
function timeoutBounds(sku: string | undefined) {
  return isConsumption(sku)
    ? { defaultMs: 5 * 60_000, maxMs: 10 * 60_000, max: '00:10:00', unbounded: false }
    : {
        defaultMs: 30 * 60_000,
        maxMs: Number.POSITIVE_INFINITY,
        max: '10675199.02:48:05.4775807',
        unbounded: true,
      };
}

/**
 * The runtime refuses to start without host.json's schema version 2.0 (HostJsonFileConfigurationSource):
 * an empty object is the only host.json it accepts without one (it writes the default then).
 */
function checkVersion(host: Record<string, unknown>): void {
  if (Object.keys(host).length === 0) return;
  const version = host.version;
  if (version === undefined || version === null || version === '')
    throw new Error(
      "The host.json file is missing the required 'version' property. See https://aka.ms/functions-hostjson for steps to migrate the configuration file.",
    );
  const text = String(version);
  if (text !== '2.0')
    throw new Error(
      `'${text}' is an invalid value for host.json 'version' property. We recommend you set the 'version' property to '2.0'. ${
        text.startsWith('3')
          ? 'This does not correspond to the function runtime version, only to the schema version of the host.json file. '
          : ''
      }See https://aka.ms/functions-hostjson for more information on this configuration file.`,
    );
}

/** Kestrel's limit the host sets (ScriptConstants.DefaultMaxRequestBodySize). */
const DEFAULT_REQUEST_BODY_LIMIT = 104_857_600;

/**
 * The request size limit: FUNCTIONS_REQUEST_BODY_SIZE_LIMIT when long.TryParse takes it, as the host's
 * HttpRequestBodySizeMiddleware reads it, else 100 MB. A negative one, which Kestrel refuses on every
 * request there (500), stops the start here.
 */
function requestBodyLimit(settings: Settings): number {
  const text = settings.FUNCTIONS_REQUEST_BODY_SIZE_LIMIT;
  const value = text === undefined ? undefined : parseNetInteger(text);
  if (value === undefined) return DEFAULT_REQUEST_BODY_LIMIT;
  if (value < 0n)
    throw new Error(
      `FUNCTIONS_REQUEST_BODY_SIZE_LIMIT is ${value}: a request size limit cannot be negative (in Azure every request would answer 500)`,
    );
  return Number(value);
}

/** What host.json says of watching the app's files (the runtime's ScriptJobHostOptions). */
export interface FileWatching {
  /** `fileWatchingEnabled`, true unless host.json says false. */
  enabled: boolean;
  /** Folders of the app (by their name at its top) whose every change restarts the host. */
  directories: string[];
  /** File names (any case, in any folder) whose change restarts the host. */
  files: string[];
}

const names = (value: unknown) =>
  Array.isArray(value) ? value.filter((name): name is string => typeof name === 'string') : [];

/**
 * host.json's `fileWatchingEnabled`, `watchDirectories` and `watchFiles`, added to the runtime's own
 * (ScriptJobHostOptionsSetup: node_modules; host.json, function.json, proxies.json). A host.json that
 * cannot be read gives the defaults: the host's start says what is wrong with it.
 */
export function hostFileWatching(appDir: string): FileWatching {
  let host: Record<string, unknown> = {};
  try {
    const raw = JSON.parse(readFileSync(join(appDir, 'host.json'), 'utf8'));
    if (raw && typeof raw === 'object') host = raw;
  } catch {
    // The defaults.
  }
  return {
    enabled: host.fileWatchingEnabled !== false,
    directories: ['node_modules', ...names(host.watchDirectories)],
    files: ['host.json', 'function.json', 'proxies.json', ...names(host.watchFiles)],
  };
}

/** `settings`: the app settings (WEBSITE_SKU, which App Service sets from its plan; the request size limit). */
export function loadHostConfig(appDir: string, settings: Settings = {}): HostConfig {
  const sku = settings.WEBSITE_SKU;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(appDir, 'host.json'), 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`no host.json in ${appDir}`);
    throw new Error(`host.json is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = hostJsonSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`host.json: ${z.prettifyError(parsed.error)}`);
  const host = parsed.data;
  checkVersion(host);
  const bounds = timeoutBounds(sku);
  let functionTimeoutMs: number | undefined = bounds.defaultMs;
  if (host.functionTimeout === '-1' && bounds.unbounded) functionTimeoutMs = undefined;
  else if (host.functionTimeout !== undefined) {
    functionTimeoutMs = host.functionTimeout === '-1' ? -86_400_000 : parseTimeSpan(host.functionTimeout);
    if (functionTimeoutMs === undefined)
      throw new Error(`host.json: functionTimeout "${host.functionTimeout}" is not hh:mm:ss`);
    if (functionTimeoutMs < 1000 || functionTimeoutMs > bounds.maxMs)
      throw new Error(
        `host.json: FunctionTimeout must be greater than 00:00:01 and less than ${bounds.max}.`,
      );
  }
  const eventHubs = host.extensions?.eventHubs;
  return {
    routePrefix: (host.extensions?.http?.routePrefix ?? 'api').replace(/^\/+|\/+$/g, ''),
    functionTimeoutMs,
    logLevels: Object.fromEntries(
      Object.entries(host.logging?.logLevel ?? {}).map(([category, level]) => [
        category.toLowerCase(),
        level,
      ]),
    ),
    blobs: {
      poisonBlobThreshold: host.extensions?.blobs?.poisonBlobThreshold ?? 5,
      maxDegreeOfParallelism:
        host.extensions?.blobs?.maxDegreeOfParallelism ??
        8 * (isConsumption(sku) ? 1 : availableParallelism()),
    },
    eventHubs: {
      maxBatchSize: eventHubs?.maxEventBatchSize ?? eventHubs?.maxBatchSize ?? 100,
      checkpointFrequency: eventHubs?.batchCheckpointFrequency ?? 1,
      initialOffset: initialOffset(eventHubs?.initialOffsetOptions),
      clientRetry: clientRetryOptions(eventHubs?.clientRetryOptions),
    },
    maxRequestBodySize: readLocalSettings(appDir).Host?.MaxRequestBodySize,
    requestBodyLimit: requestBodyLimit(settings),
  };
}

const localSettingsSchema = z.looseObject({
  IsEncrypted: z.boolean().optional(),
  Values: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  /** Core Tools' local host settings (LocalHttpPort, CORS …); only MaxRequestBodySize is read, by this host alone. */
  Host: z.looseObject({ MaxRequestBodySize: z.number().int().positive().optional() }).optional(),
});

/** local.settings.json, checked (an absent file is empty). */
function readLocalSettings(appDir: string): z.output<typeof localSettingsSchema> {
  let raw: unknown;
  try {
    raw = readJsonIfExists(join(appDir, 'local.settings.json')) ?? {};
  } catch (error) {
    throw new Error(`local.settings.json is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = localSettingsSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`local.settings.json: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/**
 * The environment the app runs with. Precedence, as `func start` applies it: a variable already set
 * (non-empty) in the environment wins over `local.settings.json` `Values`; the component's `settings`
 * are the app settings the stack gives the app (Azure's "Application settings"), so they count as
 * environment and win over both.
 */
export function resolveAppSettings(
  appDir: string,
  settings: Record<string, string>,
  environment: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const local = readLocalSettings(appDir);
  if (local.IsEncrypted)
    throw new Error('local.settings.json is encrypted; this host reads only plain values');
  const resolved: Record<string, string> = {};
  for (const [name, value] of Object.entries(local.Values ?? {})) {
    if (!environment[name]) resolved[name] = String(value);
  }
  for (const [name, value] of Object.entries(settings)) resolved[name] = value;
  return resolved;
}

/**
 * The environment of the host's process from its start: `environment` with the app settings as the app
 * will read them (resolveAppSettings), as in Azure. So the Node worker's arguments
 * (`languageWorkers__node__arguments`) and NODE_OPTIONS apply to it, and the SDKs the host loads read
 * theirs (AZURE_LOG_LEVEL) as they load. Without them when local.settings.json cannot be read: the host's
 * start then says why.
 */
export function appEnvironment(
  appDir: string,
  settings: Record<string, string>,
  environment: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  try {
    return { ...environment, ...resolveAppSettings(appDir, settings, environment) };
  } catch {
    return environment;
  }
}
