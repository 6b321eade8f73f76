/**
 * The documented-status table against the embedded stack, or against TASKSTACK_TARGET_FILE (a
 * stack.json-shaped file) for a stack running elsewhere: rows needing fields the target lacks are
 * skipped, each named with the field it lacks.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDataDir } from '../emulators/core/testing.ts';
import type { Stack } from '../emulators/stack/launcher.ts';
import { stackFilePath } from '../emulators/stack/stackfile.ts';
import { runCli, withoutTestCa } from '../emulators/stack/test-support.ts';
import { ELSEWHERE, type Memo, ROWS } from './rows.ts';
import { formatTable, type RowResult, runRow, skipReason } from './table.ts';
import { nothingRan, readTarget, TARGET_ENV, type Target, targetFileFrom } from './target.ts';

const targetFile = targetFileFrom(process.argv, process.env);
// Known before the tests are collected, so a row the target cannot serve is reported as skipped by name.
const fileTarget = targetFile ? readTarget(targetFile) : undefined;

describe(`the documented-status table against ${targetFile ?? 'the embedded stack'}`, () => {
  const data = testDataDir();
  let stack: Stack | undefined;
  let target: Target = fileTarget ?? {};
  const memo: Memo = {};
  const passed = new Set<string>();
  const results: RowResult[] = [];

  beforeAll(async () => {
    if (fileTarget) return;
    // Loaded only here: a run against a target file never loads the launcher.
    const { startEmbeddedTarget } = await import('./embedded.ts');
    ({ stack, target } = await startEmbeddedTarget(data.dir));
  });
  afterAll(async () => {
    console.log(`documented-status table:\n${formatTable(results)}`);
    await stack?.stop();
    data.remove();
  });

  for (const row of ROWS) {
    const reason = fileTarget ? skipReason(row, fileTarget) : '';
    it.skipIf(reason)(`${row.name}${reason ? ` (skipped: ${reason})` : ''}`, async () => {
      const result = await runRow(row, target, memo, passed);
      results.push(result);
      expect(result.detail).toBe('');
      expect(result.outcome).toBe('pass');
    });
  }

  // Skipped tests pass in vitest: without this, a target naming none of the fields passes `npm test`.
  if (fileTarget)
    it('the target lets at least one row run', () => {
      const runnable = ROWS.filter((row) => !skipReason(row, fileTarget));
      expect(runnable.length, nothingRan(targetFile ?? '')).toBeGreaterThan(0);
    });

  it.skipIf(fileTarget)(
    'stack.json has every field the table needs: nothing is skipped on the embedded stack',
    () => {
      for (const row of ROWS) expect(skipReason(row, target), row.name).toBe('');
    },
  );

  it.skipIf(fileTarget)(
    'conformance --target FILE: a target without the gateway runs the other rows and names each skipped one',
    async () => {
      const {
        gatewayUrl: _,
        subscriptionKey: __,
        ...withoutGateway
      } = JSON.parse(readFileSync(stackFilePath(data.dir), 'utf8'));
      const file = join(data.dir, 'no-gateway.json');
      writeFileSync(file, JSON.stringify(withoutGateway), { mode: 0o600 });
      // As users run it (taskstack conformance --target FILE), the CLI trusting the CA of the target's
      // dataDir; not spawnSync: this process hosts the stack.
      const run = await runCli(['conformance', '--target', file], {
        ...withoutTestCa(process.env),
        [TARGET_ENV]: '',
      });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const lines = run.stdout.split('\n');
      const gatewayRows = ROWS.filter((row) => row.needs.includes('gatewayUrl'));
      for (const row of gatewayRows) {
        const line = lines.find((text) => text.includes(row.name));
        expect(line, row.name).toMatch(/^SKIP .* target has no gatewayUrl/);
      }
      expect(lines.filter((text) => text.startsWith('PASS')).length).toBe(ROWS.length - gatewayRows.length);
      expect(run.stdout).toContain(`0 failed, ${gatewayRows.length + ELSEWHERE.length} skipped`);
    },
  );

  it.skipIf(fileTarget)(
    'taskstack conformance, as a new user runs it: the HTTPS rows trust the stack’s CA beside the machine’s own NODE_EXTRA_CA_CERTS',
    async () => {
      // Many machines name a bundle of their own (this one does); it holds no CA of the stack's.
      const machines = join(data.dir, 'machine-ca.pem');
      writeFileSync(machines, rootCertificates[0] as string);
      // Not spawnSync: this process hosts the stack, whose control API the gateway rows call.
      const run = await runCli(['conformance'], {
        ...process.env,
        NODE_EXTRA_CA_CERTS: machines,
        [TARGET_ENV]: '',
        TASKSTACK_DATA_DIR: data.dir,
      });
      expect(run.stderr).toBe('');
      expect(run.stdout).toContain(`${ROWS.length} passed, 0 failed, ${ELSEWHERE.length} skipped`);
      expect(run.status).toBe(0);
    },
  );
});
