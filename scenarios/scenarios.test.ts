/** Every scenario against the embedded stack (which offers everything a scenario can need). */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedTarget } from '../contracts/embedded.ts';
import type { Target } from '../contracts/target.ts';
import { testDataDir } from '../emulators/core/testing.ts';
import type { Stack } from '../emulators/stack/launcher.ts';
import { stackFilePath } from '../emulators/stack/stackfile.ts';
import { SCENARIOS } from './scenarios.ts';

const CLI = fileURLToPath(new URL('../emulators/stack/taskstack.mjs', import.meta.url));

describe('the scenarios against the embedded stack', () => {
  const data = testDataDir();
  let stack: Stack;
  let target: Target;

  beforeAll(async () => {
    ({ stack, target } = await startEmbeddedTarget(data.dir));
  });
  afterAll(async () => {
    await stack?.stop();
    data.remove();
  });

  for (const scenario of SCENARIOS)
    it(`${scenario.name}: ${scenario.description}`, async () => {
      const steps: string[] = [];
      await scenario.run(target, (text) => steps.push(text));
      expect(steps.length).toBeGreaterThan(0);
    });

  it('taskstack scenario run all --target FILE: a target without logs or clock runs the rest and says why it skipped', () => {
    const { logs: _, controlUrl: __, ...remote } = JSON.parse(readFileSync(stackFilePath(data.dir), 'utf8'));
    const file = join(data.dir, 'remote.json');
    writeFileSync(file, JSON.stringify(remote), { mode: 0o600 });
    const run = spawnSync(process.execPath, [CLI, 'scenario', 'run', 'all', '--target', file], {
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^PASS {2}attachment-metadata /m);
    expect(run.stdout).toMatch(/^SKIP {2}createtask-blob +target has no functionsLog$/m);
    expect(run.stdout).toMatch(/^SKIP {2}gateway-limit-rewrite +target has no controlUrl$/m);
    expect(run.stdout).toMatch(/^SKIP {2}key-renewal +target has no controlUrl$/m);
  });
});
