/** The app's configuration: `host.json` and the app settings (environment + `local.settings.json`). */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { printable, readTextIfExists } from '../core/files.ts';
import { type HostSection, hostConfiguration, parseJObject } from './configuration.ts';
import type { Settings } from './connections.ts';
import type { RetryOptions } from './core-api.ts';
import { type ClientRetryOptions, clientRetryOptions } from './eventhub-retry.ts';
import { withHostJsonOverrides } from './hostjson-overrides.ts';
import { parseNetInteger } from './http/routes.ts';
import { hostRetryOptions } from './retry.ts';
import { timeSpan } from './timespan.ts';

const LOG_LEVELS = ['Trace', 'Debug', 'Information', 'Warning', 'Error', 'Critical', 'None'] as const;
export type HostLogLevel = (typeof LOG_LEVELS)[number];

/**
 * `logging.logLevel`: category → level, categories lower-cased (compared in any case). A level is read as
 * the logging configuration reads it (LoggerFilterConfigureOptions: Enum.TryParse ignoring case, so a
 * number too; an empty one is skipped), and refused in its words.
 */
function logLevels(section: HostSection): Record<string, HostLogLevel> {
  const levels: Record<string, HostLogLevel> = {};
  for (const [category, entry] of section.children()) {
    const text = entry.value;
    if (!text) continue;
    const name = text.trim().toLowerCase();
    const level = /^[+-]?\d+$/.test(name)
      ? LOG_LEVELS[Math.min(Math.max(Number(name), 0), 6)]
      : LOG_LEVELS.find((known) => known.toLowerCase() === name);
    if (!level) throw new Error(`host.json: Configuration value '${text}' is not supported.`);
    levels[category.toLowerCase()] = level;
  }
  return levels;
}

/**
 * Where a partition without a checkpoint starts (`extensions.eventHubs.initialOffsetOptions`): the
 * extension's OffsetType, FromStart by default; a time for FromEnqueuedTime.
 */
export type InitialOffset = { from: 'start' } | { from: 'end' } | { from: 'time'; enqueuedOn: Date };

/** OffsetType's members, in their order (their numbers). */
const OFFSET_TYPES = [
  ['FromStart', 'start'],
  ['FromEnd', 'end'],
  ['FromEnqueuedTime', 'time'],
] as const;

/**
 * InitialOffsetOptions as the extension 5.x binds them (Type an OffsetType?, EnqueuedTimeUtc a
 * DateTimeOffset?: an empty text is none), then its PostConfigure's check. The time is read as JavaScript
 * reads a date, not as DateTimeOffset.Parse does.
 */
function initialOffset(section: HostSection): InitialOffset {
  const typeOption = section.section('type');
  // OffsetType? : an empty text is none.
  const from: InitialOffset['from'] =
    (typeOption.value && typeOption.enumOf('Microsoft.Azure.WebJobs.EventHubs.OffsetType', OFFSET_TYPES)) ||
    'start';
  const timeOption = section.section('enqueuedTimeUtc');
  const time = timeOption.value;
  const enqueuedOn = time ? new Date(time) : undefined;
  if (enqueuedOn && Number.isNaN(enqueuedOn.getTime()))
    throw timeOption.unconvertible(
      'System.DateTimeOffset',
      `${time} is not a valid value for DateTimeOffset.`,
    );
  if (from !== 'time') return { from };
  if (!enqueuedOn)
    throw section.refused(
      "A time must be specified for 'enqueuedTimeUtc', when 'initialOffsetOptions.type' is set to 'fromEnqueuedTime'.",
    );
  return { from, enqueuedOn };
}

export interface HostConfig {
  routePrefix: string;
  /** Undefined means no limit (`"functionTimeout": "-1"`). */
  functionTimeoutMs: number | undefined;
  /** host.json `retry`: the policy of every function without its own (retry.ts). */
  retry: RetryOptions | undefined;
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
    /** `minEventBatchSize` and `maxWaitTime`, for functions taking many events (triggers/eventhub-held.ts). */
    minBatchSize: number;
    maxWaitTimeMs: number;
    checkpointFrequency: number;
    initialOffset: InitialOffset;
    clientRetry: ClientRetryOptions;
    /** `loadBalancingUpdateInterval`: how often the processor claims partitions without a live owner. */
    loadBalancingMs: number;
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

/** The texts of a list section's elements (`watchDirectories`: `0`, `1` …). */
const texts = (list: HostSection) =>
  list.children().flatMap(([, element]) => (element.value === undefined ? [] : [element.value]));

/**
 * host.json's `fileWatchingEnabled`, `watchDirectories` and `watchFiles` (names in any case, as the
 * binder reads them), added to the runtime's own (ScriptJobHostOptionsSetup: node_modules; host.json,
 * function.json, proxies.json), and overridden by the app's settings as its host reads them (`settings`,
 * the component's, over local.settings.json and the environment). A host.json that cannot be read gives
 * the defaults: the host's start says what is wrong with it.
 */
export function hostFileWatching(appDir: string, settings: Record<string, string> = {}): FileWatching {
  let host = hostConfiguration({});
  try {
    const json = parseJObject(readFileSync(join(appDir, 'host.json'), 'utf8'));
    host = hostConfiguration(withHostJsonOverrides(json, appEnvironment(appDir, settings)));
  } catch {
    // The defaults.
  }
  return {
    // bool.Parse's way: any case, white space around (a setting's text, or host.json's false).
    enabled: host.section('fileWatchingEnabled').value?.trim().toLowerCase() !== 'false',
    directories: ['node_modules', ...texts(host.section('watchDirectories'))],
    files: ['host.json', 'function.json', 'proxies.json', ...texts(host.section('watchFiles'))],
  };
}

/**
 * `extensions.eventHubs` as the extension (5.x and later) binds EventHubOptions: the old name
 * `eventProcessorOptions.maxBatchSize` first (the new one wins), then the properties in their declaration
 * order, each checked by its setter, in its words; then its PostConfigure's check. A top-level
 * `maxBatchSize` (the 4.x extension's name) is not read, as there.
 */
function eventHubOptions(section: HostSection): HostConfig['eventHubs'] {
  const positive = (name: string, words: string) => section.section(name).int({ min: 1, words });
  const legacyMax = section.section('eventProcessorOptions').section('maxBatchSize');
  const oldMax = legacyMax.int({ min: 1, words: 'Batch size must be larger than 0.' });
  const clientRetry = clientRetryOptions(section.section('clientRetryOptions'));
  const checkpointFrequency =
    positive('batchCheckpointFrequency', 'Batch checkpoint frequency must be larger than 0.') ?? 1;
  const maxBatchSize = positive('maxEventBatchSize', 'Batch size must be larger than 0.') ?? oldMax ?? 100;
  const minBatchSize = positive('minEventBatchSize', 'Batch size must be larger than or equal to 1.') ?? 1;
  const wait = section.section('maxWaitTime');
  const maxWaitTimeMs = wait.timeSpan() ?? 60_000;
  if (maxWaitTimeMs < 0) throw wait.refused('Max Wait Time must be larger than or equal to 0.');
  if (maxWaitTimeMs > 600_000) throw wait.refused('Max Wait Time must be less than or equal to 10 minutes.');
  // 2 s by this host's choice, where the processor's default is 10 s: a partition given up is claimed
  // again sooner.
  const balancing = section.section('loadBalancingUpdateInterval');
  const loadBalancingMs = balancing.timeSpan() ?? 2000;
  if (loadBalancingMs < 0)
    throw balancing.refused(
      `Argument LoadBalancingUpdateInterval must be a non-negative timespan value. The provided value was -${timeSpan(-loadBalancingMs)}. (Parameter 'LoadBalancingUpdateInterval')`,
    );
  const offset = initialOffset(section.section('initialOffsetOptions'));
  if (minBatchSize > maxBatchSize)
    throw section.refused('The minimum event batch size cannot be larger than the maximum event batch size.');
  return {
    maxBatchSize,
    minBatchSize,
    maxWaitTimeMs,
    checkpointFrequency,
    initialOffset: offset,
    clientRetry,
    loadBalancingMs,
  };
}

/** `settings`: the app settings (WEBSITE_SKU, which App Service sets from its plan; the request size limit). */
export function loadHostConfig(appDir: string, settings: Settings = {}): HostConfig {
  const sku = settings.WEBSITE_SKU;
  let raw: unknown;
  const file = join(appDir, 'host.json');
  try {
    raw = parseJObject(readFileSync(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`no host.json in ${appDir}`);
    // The runtime's words, then the parser's (Node's, not Json.NET's).
    throw new Error(`Unable to parse host configuration file '${file}'. ${(error as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new Error('host.json: the file must hold a JSON object');
  // The runtime checks the version in the file itself, before any setting overrides it.
  checkVersion(raw as Record<string, unknown>);
  const host = hostConfiguration(withHostJsonOverrides(raw, settings));
  const extensions = host.section('extensions');
  const bounds = timeoutBounds(sku);
  let functionTimeoutMs: number | undefined = bounds.defaultMs;
  const timeout = host.section('functionTimeout').timeSpan();
  // -1 (TimeSpan.Parse: minus one day) is no limit where the plan allows it.
  if (timeout === -86_400_000 && bounds.unbounded) functionTimeoutMs = undefined;
  else if (timeout !== undefined) {
    functionTimeoutMs = timeout;
    if (functionTimeoutMs < 1000 || functionTimeoutMs > bounds.maxMs)
      throw new Error(
        `host.json: FunctionTimeout must be greater than 00:00:01 and less than ${bounds.max}.`,
      );
  }
  const blobs = extensions.section('blobs');
  const atLeastOne = (name: string, words: string) => blobs.section(name).int({ min: 1, words });
  return {
    routePrefix: (extensions.section('http').section('routePrefix').value ?? 'api').replace(/^\/+|\/+$/g, ''),
    functionTimeoutMs,
    retry: hostRetryOptions(host.section('retry')),
    logLevels: logLevels(host.section('logging').section('logLevel')),
    blobs: {
      // The storage extension's BlobsOptions (5.x, extension bundle 4): its setters' checks, in its words.
      poisonBlobThreshold:
        atLeastOne(
          'poisonBlobThreshold',
          "PoisonBlobThreshold must not be less than 1. (Parameter 'value')",
        ) ?? 5,
      maxDegreeOfParallelism:
        atLeastOne(
          'maxDegreeOfParallelism',
          "Specified argument was out of the range of valid values. (Parameter 'value')",
        ) ?? 8 * (isConsumption(sku) ? 1 : availableParallelism()),
    },
    eventHubs: eventHubOptions(extensions.section('eventHubs')),
    maxRequestBodySize: maxRequestBodySize(readLocalSettings(appDir).maxRequestBodySize),
    requestBodyLimit: requestBodyLimit(settings),
  };
}

const localSettingsSchema = z.looseObject({
  IsEncrypted: z.boolean().nullish(),
  Values: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).nullish(),
  /** Core Tools' local host settings (LocalHttpPort, CORS …): only MaxRequestBodySize is read, by this host alone. */
  Host: z.looseObject({ MaxRequestBodySize: z.unknown() }).nullish(),
});

interface LocalSettings {
  isEncrypted: boolean;
  /** Each value as Json.NET converts it to a string; null is no value. */
  values: Record<string, string | null>;
  maxRequestBodySize?: unknown;
  /** Why the file was not read, in Core Tools' words. */
  warning?: string;
}

/**
 * local.settings.json as Core Tools reads it (AppSettingsFile since 4.2.1: JObject.Parse, then each of
 * `IsEncrypted`, `Values`, `Host` by that name exactly). An absent `IsEncrypted` is true. A file that does
 * not parse, or a value that does not convert, leaves no local settings, with Core Tools' warning; an absent
 * file leaves none without one.
 */
function readLocalSettings(appDir: string): LocalSettings {
  const path = join(appDir, 'local.settings.json');
  const none = (reason?: string): LocalSettings => ({
    isEncrypted: true,
    values: {},
    warning:
      reason && `Failed to read app settings file at '${path}'. Ensure it is a valid JSON file. ${reason}`,
  });
  const text = readTextIfExists(path);
  if (text === undefined) return none();
  let raw: unknown;
  try {
    raw = parseJObject(text);
  } catch (error) {
    return none(printable((error as Error).message));
  }
  const parsed = localSettingsSchema.safeParse(raw);
  if (!parsed.success) return none(printable(z.prettifyError(parsed.error)));
  const { IsEncrypted, Values, Host } = parsed.data;
  const values = Object.fromEntries(
    Object.entries(Values ?? {}).map(([name, value]) => [name, value === null ? null : dotNetString(value)]),
  );
  return { isEncrypted: IsEncrypted ?? true, values, maxRequestBodySize: Host?.MaxRequestBodySize };
}

/** This host's own Host setting, which Core Tools ignores: a wrong one stops the start, naming it. */
function maxRequestBodySize(value: unknown): number | undefined {
  if (value === undefined || (Number.isInteger(value) && (value as number) > 0))
    return value as number | undefined;
  throw new Error(
    `local.settings.json: Host.MaxRequestBodySize must be a whole number of bytes above 0, not ${JSON.stringify(value)}`,
  );
}

/** A JSON value as Json.NET reads it into a string: booleans as .NET prints them. */
const dotNetString = (value: string | number | boolean) =>
  typeof value === 'boolean' ? (value ? 'True' : 'False') : String(value);

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
  warn: (message: string) => void = () => {},
): Record<string, string> {
  const local = readLocalSettings(appDir);
  if (local.warning) warn(local.warning);
  // Core Tools decrypts with its machine's data-protection keys, which this host has not: only empty
  // values (which decrypt to empty ones) can be read from an encrypted file.
  if (local.isEncrypted && Object.values(local.values).some(Boolean))
    throw new Error(
      "Failed to decrypt settings. Encrypted settings only be edited through 'func settings add'.",
    );
  const resolved: Record<string, string> = {};
  for (const [name, value] of Object.entries(local.values)) {
    if (value !== null && !environment[name]) resolved[name] = value;
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
