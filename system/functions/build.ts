/**
 * Builds the app as `npm run build` does before `func start`: src/functions/*.ts → dist/functions/*.js
 * (the entry points package.json `main` names), ES modules for Node 20 with the Azure SDKs bundled in
 * (system/build.ts). Modules shared by several functions go to dist/lib/ chunks, so each is loaded once
 * per worker and its cached clients and secrets are shared by all functions. `@azure/functions` stays a
 * package of its own: the worker hands it `@azure/functions-core` through its require hook.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { glob } from 'tinyglobby';
import { type BuildReport, bundleOptions, writeBuildOutput } from '../build.ts';

const appDir = fileURLToPath(new URL('.', import.meta.url));
const distDir = join(appDir, 'dist');

/** Answers what it read and wrote (for the launcher, which builds again only when needed). */
export async function buildFunctionApp(): Promise<BuildReport> {
  const entryPoints = await glob('src/functions/*.ts', { cwd: appDir, absolute: true });
  const result = await build({
    ...bundleOptions(appDir),
    entryPoints,
    outbase: 'src',
    outdir: 'dist',
    chunkNames: 'lib/[name]-[hash]',
    splitting: true,
  });
  return writeBuildOutput(result, distDir);
}

/** The launcher builds every app through its build module's default export. */
export default buildFunctionApp;

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildFunctionApp();
