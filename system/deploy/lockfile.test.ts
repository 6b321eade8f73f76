import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}
const lock: { packages: Record<string, LockEntry> } = JSON.parse(
  readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8'),
);

/** The lock entry Node's resolution would find for `name` required from the package at `from`. */
function resolveIn(from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/node_modules/')))) {
    const key = dir ? `${dir}/node_modules/${name}` : `node_modules/${name}`;
    if (lock.packages[key]) return key;
    if (!dir) return undefined;
  }
}

// `npm ci` refuses a lock that leaves out any dependency, other platforms' optional builds included.
// An `npm install` on a machine whose registry lacks some of those builds (pact-core 18.1.0's macOS,
// Windows and arm ones, here) writes no entry for them, and CI's clean install then fails.
describe('package-lock.json', () => {
  it('has an entry for every dependency of every locked package, optional ones of other platforms too', () => {
    const missing: string[] = [];
    for (const [from, entry] of Object.entries(lock.packages)) {
      const wanted = { ...entry.dependencies, ...entry.optionalDependencies };
      for (const name of Object.keys(wanted)) {
        if (!resolveIn(from, name)) missing.push(`${from || '(root)'} → ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
