/**
 * Builds the app as `npm run build` does before App Service runs `npm start`: src/server.ts (and what it
 * imports, including the modules it shares with the function app) → dist/server.js, an ES module for
 * Node 20. Packages stay external: they are the app's dependencies. Views are read from views/ at run time.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { writeBuildOutput } from '../build.ts';

const appDir = fileURLToPath(new URL('.', import.meta.url));

/** dist/ is written as system/build.ts says: a web app started meanwhile never reads half a file. */
export async function buildWebApp(): Promise<void> {
  const { outputFiles } = await build({
    absWorkingDir: appDir,
    entryPoints: ['src/server.ts'],
    outdir: 'dist',
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: true,
    write: false,
    logLevel: 'silent',
  });
  await writeBuildOutput(outputFiles, join(appDir, 'dist'));
}

/** The launcher builds every app through its build module's default export. */
export default buildWebApp;

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildWebApp();
