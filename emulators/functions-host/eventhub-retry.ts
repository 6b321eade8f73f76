/**
 * host.json `extensions.eventHubs.clientRetryOptions`: the Event Hubs extension's EventHubsRetryOptions
 * (EventHubOptions.ClientRetryOptions), which it gives every producer and processor it makes. Read as
 * .NET's configuration binder binds them (configuration.ts; the mode's name in any case), checked as its
 * setters check them, in the binder's and the setters' words, then handed to the JS SDK as its
 * `retryOptions`.
 */
import type { RetryMode, RetryOptions } from '@azure/event-hubs';
import type { HostSection } from './configuration.ts';
import { timeSpan } from './timespan.ts';

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

/** A setter's refusal (ArgumentOutOfRangeException or ArgumentException), with its parameter's .NET name. */
const refused = (option: HostSection, words: string) =>
  option.refused(`${words} (Parameter '${option.path.split(':').at(-1)}')`);

/** Value is within [min, max], else the shared Argument.AssertInRange's words. */
function inRange(value: number, min: number, max: number, at: HostSection): number {
  if (value < min) throw refused(at, 'Value is less than the minimum allowed.');
  if (value > max) throw refused(at, 'Value is greater than the maximum allowed.');
  return value;
}

/** EventHubsRetryMode's members, in their order (their numbers). */
const MODES = [
  ['Exponential', 'exponential'],
  ['Fixed', 'fixed'],
] as const;

/** The TimeSpan properties, in their declaration order, each with its setter's check. */
const TIME_SPANS: [
  string,
  'delayMs' | 'maximumDelayMs' | 'tryTimeoutMs',
  (ms: number, at: HostSection) => number,
][] = [
  ['delay', 'delayMs', (ms, at) => inRange(ms, 1, 5 * 60_000, at)],
  [
    'maximumDelay',
    'maximumDelayMs',
    (ms, at) => {
      if (ms >= 0) return ms;
      const words = `Argument MaximumDelay must be a non-negative timespan value. The provided value was -${timeSpan(-ms)}.`;
      throw refused(at, words);
    },
  ],
  [
    'tryTimeout',
    'tryTimeoutMs',
    (ms, at) => {
      if (ms >= 0) return inRange(ms, 0, 60 * 60_000, at);
      const words =
        'A timeout value must be positive. To request using the default timeout, please use TimeSpan.Zero or null.';
      throw refused(at, words);
    },
  ],
];

/**
 * The options from host.json's `extensions.eventHubs.clientRetryOptions` (absent: the defaults), in the
 * order the binder sets the properties (their declaration order), so the first bad one is the one named.
 */
export function clientRetryOptions(section: HostSection): ClientRetryOptions {
  const options = { ...DEFAULTS };
  options.mode =
    section.section('mode').enumOf('Azure.Messaging.EventHubs.EventHubsRetryMode', MODES) ?? options.mode;
  const retries = section.section('maximumRetries');
  const count = retries.int();
  if (count !== undefined) options.maximumRetries = inRange(count, 0, 100, retries);
  for (const [key, field, check] of TIME_SPANS) {
    const at = section.section(key);
    const ms = at.timeSpan();
    if (ms !== undefined) options[field] = check(ms, at);
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
