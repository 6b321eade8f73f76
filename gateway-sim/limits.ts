/**
 * Call counters of rate-limit, rate-limit-by-key and quota, on the stack clock (so a test moves the
 * clock past a window instead of sleeping). Check-and-count is synchronous: of many concurrent calls,
 * exactly `calls` pass.
 */
import type { StackClock } from '../emulators/core/clock.ts';

export type Decision =
  | {
      allowed: true;
      remaining: number;
      /** A bandwidth quota's: counts body bytes of this call, as they pass, into the call's period. */
      countBytes?: (bytes: number) => void;
      /** For a call whose count waited: counts it (by `n`); what is left of `calls` then. */
      countCall?: (n: number) => number;
    }
  | {
      allowed: false;
      retryAfterSeconds: number /** the bandwidth, not the calls, is used up */;
      bandwidth?: boolean;
    };

/** Every this many checks, counters whose period has passed are dropped (by-key counters are unbounded). */
const SWEEP_EVERY = 1000;

export function createLimits(clock: StackClock) {
  /**
   * Sliding windows, per counter: when calls were counted (oldest first) and by how much (`counts[i]` at
   * `times[i]`: a call's increment-count is one entry however large); entries before `first` have left the
   * window; `sum` is what is counted in it.
   */
  const windows = new Map<
    string,
    { times: number[]; counts: number[]; first: number; sum: number; period: number }
  >();
  /** Fixed quota periods: start and count, per counter. */
  const quotas = new Map<string, { start: number; count: number; bytes: number; period: number }>();
  let checks = 0;
  const sweep = (now: number) => {
    if (++checks % SWEEP_EVERY) return;
    for (const [counter, { times, period }] of windows)
      if ((times.at(-1) ?? 0) <= now - period) windows.delete(counter);
    for (const [counter, { start, period }] of quotas) if (now >= start + period) quotas.delete(counter);
  };
  /** A counter's sliding window as at `now`: what has left it dropped. */
  const windowAt = (counter: string, period: number, now: number) => {
    let window = windows.get(counter);
    if (!window) {
      window = { times: [], counts: [], first: 0, sum: 0, period };
      windows.set(counter, window);
    }
    // Policies of different periods may share a counter (a counter-key value): kept for the longest.
    window.period = Math.max(window.period, period);
    const { times, counts } = window;
    while (window.first < times.length && (times[window.first] as number) <= now - period)
      window.sum -= counts[window.first++] as number;
    // What left is dropped once it is half the entries: a splice moves all the others, so not on every call.
    if (window.first * 2 > times.length) {
      times.splice(0, window.first);
      counts.splice(0, window.first);
      window.first = 0;
    }
    return window;
  };
  /** Counts `n` at `at` into a window; what is left of `calls` then. */
  const count = (window: ReturnType<typeof windowAt>, at: number, n: number, calls: number) => {
    window.times.push(at);
    window.counts.push(n);
    window.sum += n;
    return calls - window.sum;
  };
  return {
    /**
     * rate-limit(-by-key): a call passes while less than `calls` is counted in the last `periodSeconds`, and
     * counts `increment` at once (0: later, by the decision's `countCall`, at the time it counts); refused
     * calls do not count.
     */
    slidingWindow(counter: string, calls: number, periodSeconds: number, increment = 1): Decision {
      const now = clock.now();
      sweep(now);
      const period = periodSeconds * 1000;
      const window = windowAt(counter, period, now);
      const { times, counts, first, sum } = window;
      if (sum >= calls) {
        // Under `calls` again once enough of the oldest counts have left (a count over one may go past it).
        let oldest = first;
        let left = sum - (counts[first] as number);
        while (left >= calls) left -= counts[++oldest] as number;
        const leaving = times[oldest] as number;
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((leaving + period - now) / 1000)) };
      }
      if (increment) return { allowed: true, remaining: count(window, now, increment, calls) };
      return {
        allowed: true,
        remaining: calls - sum,
        // Into the window as it is then (made anew if it emptied and was swept meanwhile).
        countCall: (n) => {
          const at = clock.now();
          return count(windowAt(counter, period, at), at, n, calls);
        },
      };
    },
    /**
     * quota(-by-key): at most `calls` per fixed period, laid end to end from `anchor` (stack ms: the
     * subscription's start, or quota-by-key's first-period-start); 0 s is one endless period. A call passes
     * while the count is under `calls`, and counts `increment` at once (0: later, by the decision's
     * `countCall`); `counted` is what another policy of the same key already counted for it in this request.
     * With `kilobytes`, a call passes while the period's bytes are under them; its own are counted as they
     * pass (they are not known before), so the call that uses the last kilobyte up may go past it.
     */
    quota(
      counter: string,
      calls: number,
      periodSeconds: number,
      anchor: number,
      increment = 1,
      counted = 0,
      kilobytes?: number,
    ): Decision {
      const now = clock.now();
      sweep(now);
      const period = periodSeconds === 0 ? Infinity : periodSeconds * 1000;
      const start = period === Infinity ? anchor : anchor + Math.floor((now - anchor) / period) * period;
      let entry = quotas.get(counter);
      if (!entry || entry.start !== start) entry = { start, count: 0, bytes: 0, period };
      quotas.set(counter, entry);
      const retryAfterSeconds = Math.ceil((entry.start + period - now) / 1000);
      if (entry.count - counted >= calls) return { allowed: false, retryAfterSeconds };
      if (kilobytes !== undefined && entry.bytes >= kilobytes * 1024)
        return { allowed: false, retryAfterSeconds, bandwidth: true };
      entry.count += increment;
      // Counted into the period the call passed in, even when the count comes after it ended.
      const current = entry;
      return {
        allowed: true,
        remaining: calls - entry.count,
        countCall: (n) => {
          current.count += n;
          return calls - current.count;
        },
        countBytes:
          kilobytes === undefined
            ? undefined
            : (bytes) => {
                current.bytes += bytes;
              },
      };
    },
    /** How many counters are held (they are dropped once their period has passed). */
    get size() {
      return windows.size + quotas.size;
    },
  };
}
export type Limits = ReturnType<typeof createLimits>;
