/**
 * Listener start retries, on fake timers: the runtime's backoff, its log lines, and an end at host stop;
 * and the outage tracker and waits running listeners share.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Listener } from './host.ts';
import { backoffDelays, OUTAGE_BOUNDS, Outage, Pauses, RETRY_BOUNDS, startListener } from './listeners.ts';

const NAME = 'Functions.late';

/** A listener start that fails `failures` times, then succeeds; counts attempts and stops. */
function flaky(failures: number) {
  const state = { attempts: 0, stops: 0 };
  const start = async (): Promise<Listener> => {
    state.attempts++;
    if (state.attempts <= failures) throw new Error(`not there yet (${state.attempts})`);
    return {
      stop: async () => {
        state.stops++;
      },
    };
  };
  return { state, start };
}

let lines: string[];
const log = (level: string, message: string) => lines.push(`${level}: ${message}`);

beforeEach(() => {
  vi.useFakeTimers();
  lines = [];
});
afterEach(() => vi.useRealTimers());

describe('listener start retries', () => {
  it('backs off as the runtime does: 2 s, then 2 s + 2^(n-1)·2 s ±20 %, at most 2 min', () => {
    const delays = backoffDelays();
    const first = Array.from({ length: 10 }, () => delays.next().value);
    expect(first[0]).toBe(RETRY_BOUNDS.minMs);
    for (const [n, delay] of first.slice(1, 6).entries()) {
      const step = 2 ** n * RETRY_BOUNDS.minMs;
      expect(delay).toBeGreaterThanOrEqual(RETRY_BOUNDS.minMs + 0.8 * step);
      expect(delay).toBeLessThanOrEqual(RETRY_BOUNDS.minMs + 1.2 * step);
    }
    expect(first.at(-1)).toBe(RETRY_BOUNDS.maxMs);
  });

  it('logs the failure, retries in the background and says when the listener started', async () => {
    const { state, start } = flaky(2);
    const listener = await startListener(NAME, start, log);
    expect(lines).toEqual([
      "error: The listener for function 'Functions.late' was unable to start. not there yet (1)",
    ]);
    await vi.advanceTimersByTimeAsync(RETRY_BOUNDS.minMs);
    await vi.advanceTimersByTimeAsync(3 * RETRY_BOUNDS.minMs);
    expect(state.attempts).toBe(3);
    expect(lines.slice(1)).toEqual([
      "information: Retrying to start listener for function 'Functions.late' (Attempt 1)",
      "error: The listener for function 'Functions.late' was unable to start. not there yet (2)",
      "information: Retrying to start listener for function 'Functions.late' (Attempt 2)",
      "information: Listener successfully started for function 'Functions.late' after 2 retries.",
    ]);
    await vi.advanceTimersByTimeAsync(10 * RETRY_BOUNDS.maxMs);
    expect(state.attempts).toBe(3);
    await listener.stop();
    expect(state.stops).toBe(1);
  });

  it('stops retrying when the host stops', async () => {
    const { state, start } = flaky(Number.POSITIVE_INFINITY);
    const listener = await startListener(NAME, start, log);
    await vi.advanceTimersByTimeAsync(RETRY_BOUNDS.minMs);
    expect(state.attempts).toBe(2);
    await listener.stop();
    await vi.advanceTimersByTimeAsync(10 * RETRY_BOUNDS.maxMs);
    expect(state.attempts).toBe(2);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stops a listener whose start was under way when the host stopped', async () => {
    let finish: () => void = () => {};
    const state = { stops: 0 };
    let attempts = 0;
    const start = () => {
      attempts++;
      if (attempts === 1) return Promise.reject(new Error('not yet'));
      return new Promise<Listener>((resolve) => {
        finish = () => resolve({ stop: async () => void state.stops++ });
      });
    };
    const listener = await startListener(NAME, start, log);
    await vi.advanceTimersByTimeAsync(RETRY_BOUNDS.minMs);
    const stopped = listener.stop();
    finish();
    await stopped;
    expect(state.stops).toBe(1);
  });

  it('starts at once without a retry when the first start succeeds', async () => {
    const { state, start } = flaky(0);
    await (await startListener(NAME, start, log)).stop();
    expect(lines).toEqual([]);
    expect(state).toEqual({ attempts: 1, stops: 1 });
  });
});

describe('outage of a running listener', () => {
  const outage = () =>
    new Outage({
      down: (error, failures, retryInMs) => lines.push(`down ${failures} ${error.message} ${retryInMs}`),
      up: (failures) => lines.push(`up after ${failures}`),
    });

  it('logs every failure with its backoff (2 s, growing, at most 30 s) and the recovery once', () => {
    const tracker = outage();
    tracker.recovered();
    expect(lines).toEqual([]);
    const delays = Array.from({ length: 8 }, (_, n) => tracker.failed(new Error(`refused ${n}`)));
    expect(delays[0]).toBe(OUTAGE_BOUNDS.minMs);
    expect(delays[1]).toBeGreaterThan(OUTAGE_BOUNDS.minMs);
    expect(delays.at(-1)).toBe(OUTAGE_BOUNDS.maxMs);
    expect(lines[0]).toBe(`down 1 refused 0 ${OUTAGE_BOUNDS.minMs}`);
    expect(lines).toHaveLength(8);
    tracker.recovered();
    tracker.recovered();
    expect(lines.slice(8)).toEqual(['up after 8']);
    expect(tracker.failed('again')).toBe(OUTAGE_BOUNDS.minMs);
    expect(lines.at(-1)).toBe(`down 1 again ${OUTAGE_BOUNDS.minMs}`);
  });
});

describe('waits of a running listener', () => {
  /** Whether `wait` has ended once the timers due by now (fake time) and pending callbacks have run. */
  const ended = async (wait: Promise<void>) => {
    let done = false;
    void wait.then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    return done;
  };

  it('end after their time, or at once when the listener stops', async () => {
    const pauses = new Pauses();
    const due = pauses.pause(5_000);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(await ended(due)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await ended(due)).toBe(true);
    const cut = pauses.pause(5_000);
    pauses.stop();
    expect(await ended(cut)).toBe(true);
    expect(pauses.stopped).toBe(true);
  });

  it('asked for after the stop (the stop came during a read), end at once', async () => {
    const pauses = new Pauses();
    pauses.stop();
    expect(await ended(pauses.pause(5_000))).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });
});
