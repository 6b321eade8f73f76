/**
 * host.json `extensions.eventHubs.clientRetryOptions`: the Event Hubs extension's EventHubsRetryOptions
 * (EventHubOptions.ClientRetryOptions), which it gives every producer and processor it makes. Read as
 * .NET's configuration binder binds them (names in any case, TimeSpans as TimeSpan.Parse reads them, the
 * mode's name in any case), checked as its setters check them, in the binder's and the setters' words,
 * then handed to the JS SDK as its `retryOptions`.
 */
import type { RetryMode, RetryOptions } from '@azure/event-hubs';
import { parseNetInteger } from './http/routes.ts';
import { parseTimeSpan, timeSpan } from './timespan.ts';

export interface ClientRetryOptions {
  mode: 'exponential' | 'fixed';
  maximumRetries: number;
  delayMs: number;
  maximumDelayMs: number;
  tryTimeoutMs: number;
}

/** EventHubsRetryOptions' defaults: 3 retries, exponential from 0.8 s, at most 1 min apart, 1 min a try. */
const DEFAULTS: ClientRetryOptions = {
  mode: 'exponential',
  maximumRetries: 3,
  delayMs: 800,
  maximumDelayMs: 60_000,
  tryTimeoutMs: 60_000,
};

/** Where the binder says it failed: the extension's section, then the properties' .NET names. */
const SECTION = 'AzureFunctionsJobHost:extensions:EventHubs:ClientRetryOptions';

const INT32 = { min: -(2n ** 31n), max: 2n ** 31n - 1n };

/** The binder's words for a value its type's converter refuses (and the converter's, after them). */
const unconvertible = (property: string, type: string, converterWords: string) =>
  new Error(
    `host.json: Failed to convert configuration value at '${SECTION}:${property}' to type '${type}'. ${converterWords}`,
  );

/** A property's .NET name, from its host.json key. */
const pascal = (key: string) => key[0]?.toUpperCase() + key.slice(1);

/** A setter's refusal (ArgumentOutOfRangeException or ArgumentException), naming the host.json key. */
const refused = (key: string, words: string) =>
  new Error(
    `host.json: extensions.eventHubs.clientRetryOptions.${key}: ${words} (Parameter '${pascal(key)}')`,
  );

/** A JSON value as the configuration holds it: text (Json.NET writes `true` as `True`); null is no value. */
function configText(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  return typeof value === 'string'
    ? value
    : typeof value === 'number'
      ? String(value)
      : JSON.stringify(value);
}

/** TimeSpan.Parse, with the sign it allows; undefined where TimeSpanConverter would refuse the text. */
function signedTimeSpan(text: string): number | undefined {
  const negative = /^\s*-/.test(text);
  const ms = parseTimeSpan(negative ? text.replace('-', '') : text);
  return ms === undefined || !negative ? ms : -ms;
}

function readTimeSpan(text: string, property: string): number {
  const ms = signedTimeSpan(text);
  if (ms === undefined)
    throw unconvertible(property, 'System.TimeSpan', `${text} is not a valid value for TimeSpan.`);
  return ms;
}

/** Value is within [min, max], else the shared Argument.AssertInRange's words. */
function inRange(value: number, min: number, max: number, key: string): number {
  if (value < min) throw refused(key, 'Value is less than the minimum allowed.');
  if (value > max) throw refused(key, 'Value is greater than the maximum allowed.');
  return value;
}

/** EventHubsRetryMode as EnumConverter reads it: a name in any case, or the number of one. */
const MODES = new Map<string, ClientRetryOptions['mode']>([
  ['exponential', 'exponential'],
  ['0', 'exponential'],
  ['fixed', 'fixed'],
  ['1', 'fixed'],
]);

/** The TimeSpan properties, in their declaration order, each with its setter's check. */
const TIME_SPANS: [string, 'delayMs' | 'maximumDelayMs' | 'tryTimeoutMs', (ms: number) => number][] = [
  ['delay', 'delayMs', (ms) => inRange(ms, 1, 5 * 60_000, 'delay')],
  [
    'maximumDelay',
    'maximumDelayMs',
    (ms) => {
      if (ms >= 0) return ms;
      const words = `Argument MaximumDelay must be a non-negative timespan value. The provided value was -${timeSpan(-ms)}.`;
      throw refused('maximumDelay', words);
    },
  ],
  [
    'tryTimeout',
    'tryTimeoutMs',
    (ms) => {
      if (ms >= 0) return inRange(ms, 0, 60 * 60_000, 'tryTimeout');
      const words =
        'A timeout value must be positive. To request using the default timeout, please use TimeSpan.Zero or null.';
      throw refused('tryTimeout', words);
    },
  ],
];

/**
 * The options from host.json's object (absent: the defaults), in the order the binder sets the
 * properties (their declaration order), so the first bad one is the one named.
 */
export function clientRetryOptions(section: Record<string, unknown> | undefined): ClientRetryOptions {
  const text = (name: string) =>
    configText(Object.entries(section ?? {}).find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1]);
  const options = { ...DEFAULTS };
  const mode = text('mode');
  if (mode !== undefined) {
    const name = MODES.get(mode.trim().toLowerCase());
    if (!name)
      throw unconvertible(
        'Mode',
        'Azure.Messaging.EventHubs.EventHubsRetryMode',
        `${mode} is not a valid value for EventHubsRetryMode.`,
      );
    options.mode = name;
  }
  const retries = text('maximumRetries');
  if (retries !== undefined) {
    const value = parseNetInteger(retries, INT32);
    if (value === undefined)
      throw unconvertible(
        'MaximumRetries',
        'System.Int32',
        `${retries} is not a valid value for Int32. (Parameter 'value')`,
      );
    options.maximumRetries = inRange(Number(value), 0, 100, 'maximumRetries');
  }
  for (const [key, field, check] of TIME_SPANS) {
    const value = text(key);
    if (value !== undefined) options[field] = check(readTimeSpan(value, pascal(key)));
  }
  return options;
}

/**
 * The JS SDK's retryOptions for these (a new object each time: the SDK writes into the one it is given).
 * Where the two clients' policies differ, the .NET one's outcome is kept: it retries nothing when its
 * maximum delay is zero, and caps fixed delays too, where the JS SDK caps exponential ones only.
 */
export function sdkRetryOptions(options: ClientRetryOptions): RetryOptions {
  const fixed = options.mode === 'fixed';
  return {
    maxRetries: options.maximumDelayMs === 0 ? 0 : options.maximumRetries,
    // Written out, so the SDK loads only when an app needs it.
    mode: fixed ? (1 as RetryMode.Fixed) : (0 as RetryMode.Exponential),
    retryDelayInMs: fixed ? Math.min(options.delayMs, options.maximumDelayMs) : options.delayMs,
    maxRetryDelayInMs: options.maximumDelayMs,
    timeoutInMs: options.tryTimeoutMs,
  };
}
