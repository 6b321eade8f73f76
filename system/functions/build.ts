/**
 * Builds the app as `npm run build` does before `func start`: src/functions/*.ts → dist/functions/*.js
 * (the entry points package.json `main` names), ES modules for Node 20. Modules shared by several
 * functions go to dist/lib/ chunks, so each is loaded once per worker and its cached clients and
 * secrets are shared by all functions. Packages stay external: they are the app's dependencies.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { glob } from 'tinyglobby';

const appDir = fileURLToPath(new URL('.', import.meta.url));
const distDir = join(appDir, 'dist');

const sameContent = (path: string, contents: Uint8Array) => {
  try {
    return Buffer.from(contents).equals(readFileSync(path));
  } catch {
    return false;
  }
};

/**
 * Other hosts (parallel test files) may be loading dist/ while this runs: only changed files are
 * replaced, each atomically, and stale ones removed afterwards, so a reader never sees a missing or
 * half-written file when the sources have not changed.
 */
export async function buildFunctionApp(): Promise<void> {
  const entryPoints = await glob('src/functions/*.ts', { cwd: appDir, absolute: true });
  const { outputFiles } = await build({
    absWorkingDir: appDir,
    entryPoints,
    outbase: 'src',
    outdir: 'dist',
    chunkNames: 'lib/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: true,
    write: false,
    logLevel: 'silent',
  });
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

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildFunctionApp();
