/**
 * Starting a trigger's listener as the WebJobs host does (its FunctionListener, in the partial start-up
 * mode the Functions host runs in): a listener that cannot start leaves the rest of the host running, and
 * its start is retried in the background with a randomized exponential backoff until it succeeds or the
 * host stops. A trigger whose container, hub or storage appears after the host started thus begins by
 * itself, with the runtime's log lines.
 */
import type { StackClock } from '../core/clock.ts';
import type { Listener } from './host.ts';

type Log = (level: 'information' | 'error', message: string) => void;

/** The runtime's bounds: 2 s before the first retry, never more than 2 min between two. */
export const RETRY_BOUNDS = { minMs: 2_000, maxMs: 120_000 };

/**
 * The runtime's RandomizedExponentialBackoffStrategy for failures: `min`, then `min + 2^(n-1)·min`
 * with ±20 % jitter, capped at `max` (real time: retries wait for a process, not for stack time).
 */
export function* backoffDelays({ minMs, maxMs } = RETRY_BOUNDS): Generator<number, never> {
  yield minMs;
  for (let exponent = 0; ; exponent++) {
    const jitter = 0.8 + Math.random() * 0.4;
    yield Math.min(maxMs, minMs + jitter * 2 ** exponent * minMs);
  }
}

/**
 * Starts a listener (`name` as the runtime shows it, `Functions.<name>`); if the start fails, logs it
 * and keeps retrying. The returned listener's stop ends the retries and stops whatever has started.
 */
export async function startListener(
  name: string,
  start: () => Promise<Listener>,
  log: Log,
  delays: Iterator<number> = backoffDelays(),
): Promise<Listener> {
  let listener: Listener | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let attempt: Promise<void> | undefined;
  const tryStart = async () => {
    try {
      listener = await start();
    } catch (error) {
      log('error', `The listener for function '${name}' was unable to start. ${(error as Error).message}`);
    }
    return listener !== undefined;
  };
  const retry = (retries: number) => {
    timer = setTimeout(() => {
      attempt = (async () => {
        log('information', `Retrying to start listener for function '${name}' (Attempt ${retries})`);
        if (await tryStart())
          log(
            'information',
            `Listener successfully started for function '${name}' after ${retries} retries.`,
          );
        else if (!stopped) retry(retries + 1);
      })();
    }, delays.next().value);
  };
  if (!(await tryStart())) retry(1);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      // A start under way when the host stops is let finish, then stopped with the rest.
      await attempt;
      await listener?.stop();
    },
  };
}

/**
 * Bounds for a running listener that lost what it reads from (store restarted, network gone): the same
 * randomized backoff, capped at 30 s so that a flow resumes soon after its store is back.
 */
export const OUTAGE_BOUNDS = { minMs: 2_000, maxMs: 30_000 };

/**
 * One running listener's view of an outage of its store: `failed` counts a failure, has it logged and
 * answers how long to wait before trying again; `recovered` (called on each success) logs the end of an
 * outage once and starts the backoff afresh. One of these per flow (lease, partition, scan, status).
 */
export class Outage {
  #failures = 0;
  #delays: Iterator<number>;

  constructor(
    private readonly report: {
      down(error: Error, failures: number, retryInMs: number): void;
      up(failures: number): void;
    },
    private readonly bounds = OUTAGE_BOUNDS,
  ) {
    this.#delays = backoffDelays(bounds);
  }

  get failures(): number {
    return this.#failures;
  }

  failed(error: unknown): number {
    this.#failures++;
    const delay = this.#delays.next().value;
    this.report.down(error instanceof Error ? error : new Error(String(error)), this.#failures, delay);
    return delay;
  }

  recovered(): void {
    if (this.#failures === 0) return;
    this.report.up(this.#failures);
    this.#failures = 0;
    this.#delays = backoffDelays(this.bounds);
  }
}

/**
 * The waits of a running listener (a poll delay, an outage's backoff) that its stop cuts short: `stop`
 * ends those under way, and once stopped a wait ends at once. A stop arriving while the listener is
 * reading its store would otherwise find no wait to end, and the read's next wait would hold the host's
 * stop for a whole poll delay (5 s for a change feed).
 */
export class Pauses {
  #stopped = false;
  #wakers = new Set<() => void>();

  get stopped(): boolean {
    return this.#stopped;
  }

  /**
   * Waits `ms` of real time or, given the stack clock, of stack time: a delay that is part of a trigger's
   * schedule (a change feed's poll delay) follows the clock as a timer's schedule does, so moving it
   * forward ends the wait; an outage's backoff waits for another process, in real time.
   */
  pause(ms: number, clock?: StackClock): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      let cancel: () => void;
      const wake = () => {
        cancel();
        this.#wakers.delete(wake);
        resolve();
      };
      if (clock) {
        // clock.at calls back at once when already due, before handing out its canceller.
        cancel = clock.at(clock.now() + ms, () => setImmediate(wake));
      } else {
        const timer = setTimeout(wake, ms);
        cancel = () => clearTimeout(timer);
      }
      this.#wakers.add(wake);
    });
  }

  stop(): void {
    this.#stopped = true;
    for (const wake of this.#wakers) wake();
  }
}
