/**
 * Function-level retry policies (`retry` in app.timer/app.eventHub/app.cosmosDB), applied as WebJobs'
 * FunctionExecutorExtensions.TryExecuteAsync does: a failed run is run again in the same trigger
 * context (before a checkpoint or lease moves) until it succeeds or `maxRetryCount` retries have failed
 * (-1: no limit), waiting between runs on the stack clock; a stopping listener ends the wait.
 * Delays as FixedDelayRetryAttribute and ExponentialBackoffRetryAttribute (its
 * RandomizedExponentialBackoffStrategy) compute them; log lines as WebJobs' LoggerExtensions.
 */
import type { HostSection } from './configuration.ts';
import type { RegisteredFunction, RetryOptions } from './core-api.ts';
import type { Host } from './host.ts';
import { asError, type InvocationOutcome, type TriggerInput } from './invoke.ts';
import type { Pauses } from './listeners.ts';
import { timeSpan } from './timespan.ts';

/** The triggers whose bindings carry WebJobs' [SupportsRetry] (Timer, Event Hubs, Cosmos DB). */
export const RETRY_TRIGGERS = new Set(['timertrigger', 'eventhubtrigger', 'cosmosdbtrigger']);

/** RetryStrategy's members, in their order (their numbers). */
const STRATEGIES = [
  ['ExponentialBackoff', 'exponentialBackoff'],
  ['FixedDelay', 'fixedDelay'],
] as const;

/**
 * host.json's `retry` (ScriptJobHostOptions.Retry): undefined when not given. Checked as
 * Utility.ValidateRetryOptions checks it at start, in the words of what it throws; the strategy
 * defaults to the enum's first member, as the binder leaves it.
 */
export function hostRetryOptions(section: HostSection): RetryOptions | undefined {
  if (section.children().length === 0) return undefined;
  // The binder converts every value first, in RetryOptions' order; then the checks, in theirs.
  const retryStrategy =
    section
      .section('strategy')
      .enumOf('Microsoft.Azure.WebJobs.Script.Description.RetryStrategy', STRATEGIES) ?? 'exponentialBackoff';
  const maxRetryCount = section.section('maxRetryCount').int();
  const read = (name: string) => section.section(name).timeSpan();
  const [delay, minimum, maximum] = ['delayInterval', 'minimumInterval', 'maximumInterval'].map(read);
  const required = <T>(value: T | undefined, name: string): T => {
    if (value === undefined) throw section.refused(`Value cannot be null. (Parameter '${name}')`);
    return value;
  };
  const seconds = (ms: number) => ({ seconds: ms / 1000 });
  const count = required(maxRetryCount, 'MaxRetryCount');
  const options: RetryOptions =
    retryStrategy === 'fixedDelay'
      ? { retryStrategy, maxRetryCount: count, delayInterval: seconds(required(delay, 'DelayInterval')) }
      : {
          retryStrategy,
          maxRetryCount: count,
          minimumInterval: seconds(required(minimum, 'MinimumInterval')),
          maximumInterval: seconds(required(maximum, 'MaximumInterval')),
        };
  // RetryAttribute's constructor, which the check builds last.
  if (count < -1)
    throw section.refused(
      "Specified argument was out of the range of valid values. (Parameter 'maxRetryCount')",
    );
  return options;
}

/**
 * A function's policy: its own, else host.json's. The runtime puts host.json's on the type it generates
 * for all functions (ScriptHost.CreateTypeAttributes) and WebJobs reads the method's first
 * (TypeUtility.GetHierarchicalAttributeOrNull).
 */
export const retryPolicy = (fn: RegisteredFunction, host: Pick<Host, 'config'>) =>
  fn.retryOptions ?? host.config.retry;

const ms = (duration: { seconds?: number } | undefined) => (duration?.seconds ?? 0) * 1000;

/** The delays before retries 1, 2 … of one failed run: a generator, as the strategy keeps state. */
export function* retryDelays(options: RetryOptions, random = Math.random): Generator<number> {
  if (options.retryStrategy !== 'exponentialBackoff') {
    for (;;) yield ms(options.delayInterval);
  }
  const min = ms(options.minimumInterval);
  const max = ms(options.maximumInterval);
  let current = 0;
  let exponent = 0;
  for (;;) {
    if (current !== max) {
      let interval = min;
      // RandomizationFactor 0.2; the delta is the minimum interval.
      if (exponent > 0) interval += (0.8 + random() * 0.4) * 2 ** (exponent - 1) * min;
      if (interval < max) {
        current = interval;
        exponent++;
      } else current = max;
    }
    yield current;
  }
}

/** Runs `fn` for one trigger input with its retry policy, if its trigger supports one. */
export async function invokeWithRetries(
  host: Host,
  fn: RegisteredFunction,
  input: TriggerInput,
  pauses: Pauses,
): Promise<InvocationOutcome> {
  const options = retryPolicy(fn, host);
  const type =
    Object.values(fn.bindings)
      .find((b) => /trigger$/i.test(b.type))
      ?.type.toLowerCase() ?? '';
  if (!options || !RETRY_TRIGGERS.has(type)) return host.invoker.invoke(fn, input);
  const max = options.maxRetryCount ?? 0;
  const delays = retryDelays(options);
  const say = (level: 'debug' | 'error' | 'warning', id: string, message: string) =>
    host.logs.invocation(fn.name, id, level, message);
  let retryContext: TriggerInput['retryContext'] = { retryCount: 0, maxRetryCount: max };
  for (let attempt = 0; ; ) {
    const outcome = await host.invoker.invoke(fn, { ...input, retryContext });
    if (outcome.succeeded) return outcome;
    if (max !== -1 && attempt === max) {
      say('error', outcome.invocationId, `Function execution failed after '${attempt}' retries.`);
      return outcome;
    }
    attempt++;
    const error = outcome.timedOut ? undefined : asError(outcome.error);
    retryContext = {
      retryCount: attempt,
      maxRetryCount: max,
      ...(error && { exception: { message: error.message, stackTrace: error.stack ?? '', source: '' } }),
    };
    const delay = delays.next().value as number;
    say(
      'debug',
      outcome.invocationId,
      `Waiting for \`${timeSpan(delay)}\` before retrying function execution. Next attempt: '${attempt}'. Max retry count: '${max}'.`,
    );
    await pauses.pause(delay, host.clock);
    if (pauses.stopped) {
      say('warning', outcome.invocationId, 'Invocation cancelled - exiting retry loop.');
      return outcome;
    }
  }
}
