/**
 * Loads the app as the Node.js worker does: every file `package.json` `main` matches (a glob), ESM through
 * `import()` for `.mjs` or `"type": "module"`, CommonJS through `require` otherwise; then the `appStart` hooks.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { glob } from 'tinyglobby';
import { z } from 'zod';
import { importModule } from '../core/bundle.mjs';
import { readJsonIfExists } from '../core/files.ts';
import type { AppRegistry } from './core-api.ts';

const packageJsonSchema = z.looseObject({ main: z.string().optional(), type: z.string().optional() });
const requireFile = createRequire(import.meta.url);

function isEsModule(file: string, type: string | undefined): boolean {
  if (file.endsWith('.mjs') || file.endsWith('.mts')) return true;
  if (file.endsWith('.cjs') || file.endsWith('.cts')) return false;
  return type === 'module';
}

/** Imports the app's entry points; the app registers its functions through `@azure/functions-core` as they load. */
export async function loadApp(appDir: string): Promise<string[]> {
  let raw: unknown;
  try {
    raw = readJsonIfExists(join(appDir, 'package.json'));
  } catch (error) {
    throw new Error(`package.json is not valid JSON: ${(error as Error).message}`);
  }
  if (raw === undefined) throw new Error(`no package.json in ${appDir}`);
  const pkg = packageJsonSchema.safeParse(raw);
  if (!pkg.success) throw new Error(`package.json: ${z.prettifyError(pkg.error)}`);
  const pattern = pkg.data.main ?? 'index.js';
  const files = (await glob(pattern, { cwd: appDir, ignore: ['**/node_modules/**'] })).sort();
  if (files.length === 0) throw new Error(`package.json "main" (${pattern}) matches no file in ${appDir}`);
  for (const file of files) {
    const path = join(appDir, file);
    try {
      if (isEsModule(file, pkg.data.type)) await importModule(pathToFileURL(path).href);
      else requireFile(path);
    } catch (error) {
      throw new Error(`could not load entry point ${file}: ${(error as Error).message}`);
    }
  }
  return files;
}

/** Runs the `appStart` hooks with the context shape the worker gives them. */
export async function runAppStart(appDir: string, registry: AppRegistry): Promise<void> {
  const context = {
    hookData: registry.appLevelHookData,
    appHookData: registry.appHookData,
    functionAppDirectory: appDir,
  };
  for (const hook of registry.hooks.appStart) await hook(context);
}

export async function runAppTerminate(registry: AppRegistry): Promise<void> {
  const context = { hookData: registry.appLevelHookData, appHookData: registry.appHookData };
  for (const hook of registry.hooks.appTerminate) await hook(context);
}
