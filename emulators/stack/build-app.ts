import { join } from 'node:path';
import { importTypeScript } from './bundle.mjs';

/**
 * Runs an app's build module (its default export), as `npm run build` does before the app starts or is
 * packaged. The module is TypeScript; it runs through its bundle, so bare Node can run it too.
 */
export async function buildApp(dir: string, module: string): Promise<void> {
  const { default: build } = await importTypeScript(join(dir, module));
  if (typeof build !== 'function')
    throw new Error(`${join(dir, module)} has no default export to build with`);
  await build();
}
