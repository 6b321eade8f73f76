import { describe, expect, it } from 'vitest';
import { inOrder, StartInterrupted, startInOrder } from './order.ts';

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

describe('startInOrder', () => {
  const waitsFor = (name: string) => ({ functions: ['blob'], blob: [], web: [] })[name] ?? [];

  it('once a start failed, launches nothing more, even what comes up while the others stop', async () => {
    const log: string[] = [];
    let blobUp = () => {};
    const steps = {
      prepare: async (name: string) => {
        log.push(`prepare ${name}`);
      },
      launch: async (name: string) => {
        log.push(`launch ${name}`);
        if (name === 'web') throw new Error('web failed to start');
        // Azurite, the slowest service, comes up only when the test says.
        if (name === 'blob')
          await new Promise<void>((resolve) => {
            blobUp = resolve;
          });
      },
      stop: async (name: string) => {
        log.push(`stop ${name}`);
        // The functions host (waiting for blob) is stopped first; blob comes up right after, before its
        // own stop: the host's launch must not follow.
        if (name === 'functions') {
          blobUp();
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      },
    };
    await expect(startInOrder(['functions', 'blob', 'web'], waitsFor, steps)).rejects.toThrow(
      'web failed to start',
    );
    expect(log).not.toContain('launch functions');
    // Dependents stop first, and every item is stopped (whether it had launched or not).
    expect(log.filter((line) => line.startsWith('stop'))).toEqual([
      'stop functions',
      'stop web',
      'stop blob',
    ]);
  });

  it('starts each after those it waits for when nothing fails, and stops nothing', async () => {
    const log: string[] = [];
    const step = (what: string) => async (name: string) => {
      log.push(`${what} ${name}`);
    };
    await startInOrder(['functions', 'blob'], waitsFor, {
      prepare: step('prepare'),
      launch: step('launch'),
      stop: step('stop'),
    });
    expect(log).toEqual(['prepare blob', 'launch blob', 'prepare functions', 'launch functions']);
  });

  it('once interrupted, stops what started or is starting and launches nothing more', async () => {
    const log: string[] = [];
    const interrupt = new AbortController();
    const steps = {
      prepare: async (name: string) => {
        log.push(`prepare ${name}`);
      },
      launch: async (name: string) => {
        log.push(`launch ${name}`);
        // Blob is still starting when the Ctrl-C comes; its stop ends its launch.
        if (name === 'blob')
          await new Promise<void>((_, reject) => {
            blobStopped = () => reject(new Error('blob exited during start'));
            interrupt.abort();
          });
      },
      stop: async (name: string) => {
        log.push(`stop ${name}`);
        if (name === 'blob') blobStopped();
      },
    };
    let blobStopped = () => {};
    await expect(
      startInOrder(['functions', 'blob', 'web'], waitsFor, steps, interrupt.signal),
    ).rejects.toBeInstanceOf(StartInterrupted);
    expect(log).not.toContain('launch functions');
    expect(log.filter((line) => line.startsWith('stop')).sort()).toEqual([
      'stop blob',
      'stop functions',
      'stop web',
    ]);
  });
});
