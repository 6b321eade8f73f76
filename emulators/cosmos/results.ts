import { errors } from './errors.ts';

/** The results without repeats, each kept where it first appears (DISTINCT). */
export function unique(results: unknown[]): unknown[] {
  const seen = new Set<string>();
  return results.filter((result) => {
    const key = canonical(result);
    return !seen.has(key) && Boolean(seen.add(key));
  });
}

/** JSON with object keys sorted: DISTINCT takes `{a, b}` and `{b, a}` as one result, as Cosmos DB does. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'undefined';
}

/** One page of a whole answer; the continuation is how many results the pages before gave. */
export function page(results: unknown[], maxItemCount: number, token?: { skip?: number }) {
  const skip = token ? token.skip : 0;
  if (!(typeof skip === 'number' && Number.isInteger(skip) && skip >= 0))
    throw errors.badRequest('Invalid Continuation Token');
  const end = skip + maxItemCount;
  return {
    result: results.slice(skip, end),
    continuation: end < results.length ? JSON.stringify({ skip: end }) : undefined,
  };
}
