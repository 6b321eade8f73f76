/**
 * Builds the app as `npm run build` does before `func start`: src/functions/*.ts → dist/functions/*.js
 * (the entry points package.json `main` names), ES modules for Node 20. Modules shared by several
 * functions go to dist/lib/ chunks, so each is loaded once per worker and its cached clients and
 * secrets are shared by all functions. Packages stay external: they are the app's dependencies.
 */
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { glob } from 'tinyglobby';

const appDir = fileURLToPath(new URL('.', import.meta.url));

export async function buildFunctionApp(): Promise<void> {
  const entryPoints = await glob('src/functions/*.ts', { cwd: appDir, absolute: true });
  rmSync(`${appDir}dist`, { recursive: true, force: true });
  await build({
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
    logLevel: 'silent',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildFunctionApp();
