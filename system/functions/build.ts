/**
 * Builds the app as `npm run build` does before `func start`: src/functions/*.ts → dist/functions/*.js
 * (the entry points package.json `main` names), ES modules for Node 20. Modules shared by several
 * functions go to dist/lib/ chunks, so each is loaded once per worker and its cached clients and
 * secrets are shared by all functions. Packages stay external: they are the app's dependencies.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { glob } from 'tinyglobby';
import { writeBuildOutput } from '../build.ts';

const appDir = fileURLToPath(new URL('.', import.meta.url));
const distDir = join(appDir, 'dist');

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
  await writeBuildOutput(outputFiles, distDir);
}

/** The launcher builds every app through its build module's default export. */
export default buildFunctionApp;

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildFunctionApp();
