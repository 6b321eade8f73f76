import { describe, expect, it } from 'vitest';
import { StackClock } from '../emulators/core/clock.ts';
import { createLimits } from './limits.ts';

describe('gateway: limit counters', () => {
  it('counters of keys seen once are dropped once their period has passed (memory stays bounded)', () => {
    const clock = new StackClock();
    const limits = createLimits(clock);
    for (let i = 0; i < 5000; i++) limits.slidingWindow(`key-${i}`, 5, 60);
    for (let i = 0; i < 5000; i++) limits.quota(`quota-${i}`, 5, 60, clock.now());
    expect(limits.size).toBe(10_000);
    clock.advance(61_000);
    for (let i = 0; i < 1000; i++) limits.slidingWindow('steady', 1_000_000, 60);
    expect(limits.size).toBe(1);
  });

  it('a sliding window counts only the calls of the last period', () => {
    const clock = new StackClock();
    const limits = createLimits(clock);
    expect(limits.slidingWindow('a', 2, 10)).toEqual({ allowed: true, remaining: 1 });
    clock.advance(6_000);
    expect(limits.slidingWindow('a', 2, 10)).toEqual({ allowed: true, remaining: 0 });
    expect(limits.slidingWindow('a', 2, 10)).toEqual({ allowed: false, retryAfterSeconds: 4 });
    clock.advance(4_000);
    expect(limits.slidingWindow('a', 2, 10)).toEqual({ allowed: true, remaining: 0 });
    expect(limits.slidingWindow('a', 2, 10)).toEqual({ allowed: false, retryAfterSeconds: 6 });
  });

  it('a full window whose calls leave one by one: each refusal is told when the oldest leaves, round after round', () => {
    const clock = new StackClock();
    const limits = createLimits(clock);
    // Calls at 0, 1 and 2 s fill a window of 3 calls in 10 s; the next waits for the one of 0 s (7 s).
    for (let i = 0; i < 3; i++) {
      expect(limits.slidingWindow('a', 3, 10).allowed).toBe(true);
      clock.advance(1_000);
    }
    const waits: number[] = [];
    for (let round = 0; round < 12; round++) {
      const refused = limits.slidingWindow('a', 3, 10);
      if (refused.allowed) throw new Error('a full window let a call through');
      waits.push(refused.retryAfterSeconds);
      clock.advance(refused.retryAfterSeconds * 1000);
      expect(limits.slidingWindow('a', 3, 10).allowed).toBe(true);
    }
    // The calls then pass at 10, 11, 12 s, 20, 21, 22 s …: each the oldest of the next refusal.
    expect(waits).toEqual([7, 1, 1, 8, 1, 1, 8, 1, 1, 8, 1, 1]);
  });

  it('a counter shared by windows of different periods (one counter-key value) is kept for the longest', () => {
    const clock = new StackClock();
    const limits = createLimits(clock);
    expect(limits.slidingWindow('shared', 1, 10).allowed).toBe(true);
    expect(limits.slidingWindow('shared', 5, 100).allowed).toBe(true);
    clock.advance(20_000);
    // Enough checks for a sweep of the counters whose period has passed.
    for (let i = 0; i < 1000; i++) limits.slidingWindow('steady', 1_000_000, 60);
    expect(limits.slidingWindow('shared', 2, 100)).toEqual({ allowed: false, retryAfterSeconds: 80 });
  });
});
