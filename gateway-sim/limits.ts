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
      /** A quota's: counts this call (by `n`) into its period, for a call whose count waited. */
      countCall?: (n: number) => void;
    }
  | {
      allowed: false;
      retryAfterSeconds: number /** the bandwidth, not the calls, is used up */;
      bandwidth?: boolean;
    };

/** Every this many checks, counters whose period has passed are dropped (by-key counters are unbounded). */
const SWEEP_EVERY = 1000;

export function createLimits(clock: StackClock) {
  /** Sliding windows: the stack times of the calls let through (oldest first), per counter. */
  const windows = new Map<string, { times: number[]; period: number }>();
  /** Fixed quota periods: start and count, per counter. */
  const quotas = new Map<string, { start: number; count: number; bytes: number; period: number }>();
  let checks = 0;
  const sweep = (now: number) => {
    if (++checks % SWEEP_EVERY) return;
    for (const [counter, { times, period }] of windows)
      if ((times.at(-1) ?? 0) <= now - period) windows.delete(counter);
    for (const [counter, { start, period }] of quotas) if (now >= start + period) quotas.delete(counter);
  };
  return {
    /** rate-limit(-by-key): at most `calls` in any `periodSeconds`; refused calls do not count. */
    slidingWindow(counter: string, calls: number, periodSeconds: number): Decision {
      const now = clock.now();
      sweep(now);
      const period = periodSeconds * 1000;
      let window = windows.get(counter);
      if (!window) {
        window = { times: [], period };
        windows.set(counter, window);
      }
      // Policies of different periods may share a counter (a counter-key value): kept for the longest.
      window.period = Math.max(window.period, period);
      const { times } = window;
      // Drop the calls that left the window (one splice, not a filter over every call).
      let expired = 0;
      while (expired < times.length && (times[expired] as number) <= now - period) expired++;
      if (expired) times.splice(0, expired);
      if (times.length >= calls) {
        const oldest = times[0] as number;
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((oldest + period - now) / 1000)) };
      }
      times.push(now);
      return { allowed: true, remaining: calls - times.length };
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
