import { afterEach, describe, expect, it, vi } from 'vitest';
import { retryDelay } from './eventgrid.ts';

// Azure.Core's default backoff for retry n: 0.8 s × 2^(n-1), ±20 % jitter, at most 1 min.
const backoff = (retry: number): [number, number] => [640 * 2 ** (retry - 1), 960 * 2 ** (retry - 1)];

describe("the Event Grid output's wait before a retry (Azure.Core's DelayStrategy)", () => {
  afterEach(() => vi.restoreAllMocks());

  it('backs off exponentially with jitter when the topic asks for nothing, at most 1 min', () => {
    for (const retry of [1, 2, 3]) {
      const [low, high] = backoff(retry);
      for (const random of [0, 0.5, 0.999]) {
        vi.spyOn(Math, 'random').mockReturnValue(random);
        const wait = retryDelay(retry, new Headers());
        expect(wait).toBeGreaterThanOrEqual(low);
        expect(wait).toBeLessThanOrEqual(high);
      }
    }
    vi.spyOn(Math, 'random').mockReturnValue(0);
    expect(retryDelay(1)).toBe(640);
    expect(retryDelay(8)).toBe(60_000);
  });

  it('waits the larger of the backoff and what the topic asked for, uncapped', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5); // backoff 800 ms, 1.6 s, 3.2 s
    expect(retryDelay(1, new Headers({ 'retry-after': '0' }))).toBe(800);
    expect(retryDelay(3, new Headers({ 'retry-after': '1' }))).toBe(3200);
    expect(retryDelay(1, new Headers({ 'retry-after': '2' }))).toBe(2000);
    expect(retryDelay(1, new Headers({ 'retry-after': '120' }))).toBe(120_000);
    expect(retryDelay(1, new Headers({ 'retry-after': '-5' }))).toBe(800);
  });

  it('reads retry-after-ms, then x-ms-retry-after-ms, before Retry-After, whole numbers only', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const wait = (headers: Record<string, string>) => retryDelay(1, new Headers(headers));
    expect(wait({ 'retry-after-ms': '1500', 'retry-after': '9' })).toBe(1500);
    expect(wait({ 'x-ms-retry-after-ms': '2500' })).toBe(2500);
    expect(wait({ 'retry-after-ms': '1500', 'x-ms-retry-after-ms': '2500' })).toBe(1500);
    // Not a whole number: the next header is read, as .NET's int.TryParse fails.
    expect(wait({ 'retry-after-ms': '1.5', 'retry-after': '3' })).toBe(3000);
    expect(wait({ 'retry-after': '1.5' })).toBe(800);
    expect(wait({ 'retry-after': ' 4 ' })).toBe(4000);
    expect(wait({ 'retry-after-ms': '99999999999' })).toBe(800);
  });

  it('reads Retry-After as an HTTP date, and never asks a timer for more than it can wait', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const at = new Date(Date.now() + 30_000).toUTCString(); // whole seconds: 29–30 s ahead
    const wait = retryDelay(1, new Headers({ 'retry-after': at }));
    expect(wait).toBeGreaterThan(28_000);
    expect(wait).toBeLessThanOrEqual(30_000);
    expect(retryDelay(1, new Headers({ 'retry-after': new Date(0).toUTCString() }))).toBe(800);
    expect(retryDelay(1, new Headers({ 'retry-after': '2147483647' }))).toBe(2 ** 31 - 1);
  });
});
