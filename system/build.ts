/**
 * What the apps' builds (system/functions/build.ts, system/web/build.ts) share: writing esbuild's output
 * into an app's dist/ the way a running reader can bear. Other hosts (parallel test files, a started
 * app) may be loading dist/ meanwhile: only changed files are replaced, each atomically, and stale ones
 * removed afterwards, so a reader never sees a missing or half-written file when the sources have not
 * changed.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { OutputFile } from 'esbuild';
import { glob } from 'tinyglobby';

const sameContent = (path: string, contents: Uint8Array) => {
  try {
    return Buffer.from(contents).equals(readFileSync(path));
  } catch {
    return false;
  }
};

export async function writeBuildOutput(outputFiles: OutputFile[], distDir: string): Promise<void> {
  for (const file of outputFiles) {
    if (sameContent(file.path, file.contents)) continue;
    mkdirSync(dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
  const fresh = new Set(outputFiles.map((file) => file.path));
  for (const stale of await glob('**/*', { cwd: distDir, absolute: true })) {
    if (!fresh.has(stale) && !stale.endsWith('.tmp')) rmSync(stale, { force: true });
  }
}
