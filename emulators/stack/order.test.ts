import { describe, expect, it } from 'vitest';
import { inOrder } from './order.ts';

describe('inOrder', () => {
  const waitsFor = (name: string) =>
    ({ functions: ['blob', 'cosmos'], blob: [], cosmos: [], identity: [] })[name] ?? [];

  it('runs each step once, after the steps it waits for, and independent ones at once', async () => {
    const log: string[] = [];
    const step = async (name: string) => {
      log.push(`${name} begins`);
      await new Promise<void>((resolve) => setImmediate(resolve));
      log.push(`${name} ends`);
    };
    await inOrder(['functions', 'identity', 'blob', 'cosmos'], waitsFor, step);
    expect(log.filter((line) => line === 'functions begins')).toHaveLength(1);
    const at = (line: string) => log.indexOf(line);
    expect(at('functions begins')).toBeGreaterThan(Math.max(at('blob ends'), at('cosmos ends')));
    // Independent steps overlap: identity began before blob ended.
    expect(at('identity begins')).toBeLessThan(at('blob ends'));
  });

  it('rejects with the first failure and never runs what waits for it', async () => {
    const ran: string[] = [];
    const step = async (name: string) => {
      if (name === 'blob') throw new Error('blob failed');
      ran.push(name);
    };
    await expect(inOrder(['functions', 'blob', 'cosmos'], waitsFor, step)).rejects.toThrow('blob failed');
    expect(ran).not.toContain('functions');
  });
});
