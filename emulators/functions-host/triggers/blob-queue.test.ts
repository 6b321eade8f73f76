/**
 * When a failed blob runs again: the polls of the extension's blob queue listener, on a fake clock.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BlobTriggerQueue, MAX_POLL_MS, PollingBackoff } from './blob-queue.ts';

describe('PollingBackoff (RandomizedExponentialBackoffStrategy, 100 ms to 1 min)', () => {
  it('waits 100 ms, then 100 ms more than 100 ms × 2^(n−1), up to a minute, and the minimum again once messages were found', () => {
    const backoff = new PollingBackoff(() => 0.5); // no jitter
    const waits = Array.from({ length: 13 }, () => backoff.next(false));
    expect(waits).toEqual([
      100,
      200,
      300,
      500,
      900,
      1700,
      3300,
      6500,
      12_900,
      25_700,
      51_300,
      MAX_POLL_MS,
      MAX_POLL_MS,
    ]);
    expect(backoff.next(true)).toBe(100);
    expect(backoff.next(false)).toBe(200);
  });

  it('jitters the increment by ±20 %', () => {
    const low = new PollingBackoff(() => 0);
    const high = new PollingBackoff(() => 1);
    expect([low.next(true), low.next(false), low.next(false)]).toEqual([100, 180, 260]);
    expect([high.next(true), high.next(false), high.next(false)]).toEqual([100, 220, 340]);
  });
});

describe('BlobTriggerQueue', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const queue = () => new BlobTriggerQueue({ random: () => 0.5, now: Date.now });

  it('dequeues a failed message at the poll after the one that dequeued it, 100 ms on, not before', () => {
    const q = queue();
    const dequeued: number[] = [];
    q.enqueued(); // a blob found at 0: polled at once
    vi.advanceTimersByTime(30);
    q.release(dequeued, () => dequeued.push(Date.now())); // its run failed at 30
    vi.advanceTimersByTime(69);
    expect(dequeued).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(dequeued).toEqual([100]);
  });

  it('follows the backoff of the polls it missed while idle', () => {
    const q = queue();
    const dequeued: number[] = [];
    q.enqueued(); // polls at 0 (found), 100, 300, 600, 1100 …
    vi.advanceTimersByTime(350);
    q.release(dequeued, () => dequeued.push(Date.now()));
    vi.advanceTimersByTime(249);
    expect(dequeued).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(dequeued).toEqual([600]);
    // Found at 600: the next failure is dequeued 100 ms after that poll.
    q.release(dequeued, () => dequeued.push(Date.now()));
    vi.advanceTimersByTime(1000);
    expect(dequeued).toEqual([600, 700]);
  });

  it('dequeues at once when a new message wakes the listener', () => {
    const q = queue();
    const dequeued: number[] = [];
    q.enqueued();
    vi.advanceTimersByTime(5000); // idle: the next poll is a few seconds away
    q.release(dequeued, () => dequeued.push(Date.now()));
    vi.advanceTimersByTime(10);
    expect(dequeued).toEqual([]);
    q.enqueued();
    expect(dequeued).toEqual([5010]);
  });

  it('drops the messages of a listener that left, and polls no more for them', () => {
    const q = queue();
    const dequeued: string[] = [];
    const [a, b] = [{}, {}];
    q.enqueued();
    q.release(a, () => dequeued.push('a'));
    q.release(b, () => dequeued.push('b'));
    q.leave(a);
    vi.advanceTimersByTime(100);
    expect(dequeued).toEqual(['b']);
    q.release(b, () => dequeued.push('b again'));
    q.leave(b);
    expect(vi.getTimerCount()).toBe(0);
  });
});
