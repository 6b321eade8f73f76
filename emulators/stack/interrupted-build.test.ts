/**
 * Ctrl-C while the launcher bundles the components (the first start after a change): the terminal's
 * signal reaches esbuild's service too, in the launcher's process group, and its build fails.
 */
import { readFileSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import { BUILDING_COMPONENTS } from './launcher.ts';
import { descendants, spawnCli, whenPrinted } from './test-support.ts';

const data = testDataDir();
afterAll(() => data.remove());

/** A process's command name; empty once it is gone. */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

it('Ctrl-C during the components’ bundling stops the start as interrupted (130), not as a failed build', async () => {
  // A source every component's bundle holds, touched (its text unchanged): the start bundles them anew.
  const source = join(import.meta.dirname, 'child.ts');
  const { atime, mtime } = statSync(source);
  utimesSync(source, atime, new Date());
  try {
    const { child, output, exited } = spawnCli(data.dir, '--free-ports', '--components', 'keyvault');
    const group = child.pid as number;
    const building = new Promise<void>((resolve) => whenPrinted(child, BUILDING_COMPONENTS, resolve));
    await building;
    // Once esbuild's service runs: the same Ctrl-C ends it, and the build under way fails.
    await waitFor('esbuild under the launcher', () =>
      descendants(group).some((pid) => commandOf(pid) === 'esbuild'),
    );
    process.kill(-group, 'SIGINT');
    const code = await exited;
    expect({ code, output: output().slice(output().indexOf('stopping…')) }).toEqual({
      code: 130,
      output: 'stopping…\nstopped.\n',
    });
  } finally {
    // The bundles made before stay the fresh ones: no other start has to make them again.
    utimesSync(source, atime, mtime);
  }
});
