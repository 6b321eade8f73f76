/** Small helpers for `npm run bench`: medians of repeated rounds, and ratios against a baseline. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

export async function rounds<T>(count: number, round: () => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < count; i++) results.push(await round());
  return results;
}

/** Runs `work` from `concurrency` callers until `total` calls are done; returns calls per second. */
export async function throughput(
  total: number,
  concurrency: number,
  work: (i: number) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const began = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await work(next++);
    }),
  );
  return total / ((performance.now() - began) / 1000);
}

export function row(
  name: string,
  value: number,
  unit: string,
  goal?: string,
  baseline?: { name: string; value: number },
) {
  const ratio = baseline ? `  (${(value / baseline.value).toFixed(2)}× ${baseline.name})` : '';
  console.log(
    `${name.padEnd(48)} ${value.toFixed(value < 10 ? 2 : 0).padStart(9)} ${unit.padEnd(8)}${ratio}${goal ? `  goal ${goal}` : ''}`,
  );
}
