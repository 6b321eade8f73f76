/**
 * Builds the app as `npm run build` does before App Service runs `npm start`: src/server.ts (and what it
 * imports, including the modules it shares with the function app) → dist/server.js, an ES module for
 * Node 20 with the Azure SDKs bundled in (system/build.ts). Express and what it loads by name (the pug
 * view engine) and its middleware stay packages of their own. Views are read from views/ at run time.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { type BuildReport, bundleOptions, writeBuildOutput } from '../build.ts';

const appDir = fileURLToPath(new URL('.', import.meta.url));

/**
 * dist/ is written as system/build.ts says: a web app started meanwhile never reads half a file.
 * Answers what it read and wrote (for the launcher, which builds again only when needed).
 */
export async function buildWebApp(): Promise<BuildReport> {
  const result = await build({
    ...bundleOptions(appDir),
    entryPoints: ['src/server.ts'],
    outdir: 'dist',
  });
  return writeBuildOutput(result, join(appDir, 'dist'));
}

/** The launcher builds every app through its build module's default export. */
export default buildWebApp;

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildWebApp();
