/** Binding expressions as the WebJobs SDK resolves them. */
import { describe, expect, it } from 'vitest';
import { resolveExpression } from './expressions.ts';

const resolve = (template: string) =>
  resolveExpression(template, {}, {}, new Date('2026-11-26T12:34:56.789Z'));

describe('binding expressions', () => {
  it('formats {rand-guid} as Guid.ToString does: D by default, N, B, P', () => {
    expect(resolve('{rand-guid}')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(resolve('{rand-guid:N}')).toMatch(/^[0-9a-f]{32}$/);
    expect(resolve('{rand-guid:B}')).toMatch(/^\{[0-9a-f-]{36}\}$/);
    expect(resolve('{rand-guid:p}')).toMatch(/^\([0-9a-f-]{36}\)$/);
  });

  it('formats {DateTime} in UTC, yyyy-MM-ddTHH-mm-ssZ by default', () => {
    expect(resolve('{DateTime}')).toBe('2026-11-26T12-34-56Z');
    expect(resolve('{datetime:yyyy/MM/dd}')).toBe('2026/11/26');
  });
});
