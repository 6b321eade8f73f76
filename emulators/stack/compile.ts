import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';
import { glob } from 'tinyglobby';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Inside node_modules: ignored by git, and bare imports still resolve to the project's packages. */
export const COMPILED_DIR = join(ROOT, 'node_modules', '.cache', 'taskstack');

/** `./x.ts` → `./x.js` in relative import specifiers (esbuild's transform leaves specifiers alone). */
const relativeTs = /((?:from|import)\s*\(?\s*)(['"])(\.{1,2}\/[^'"]+)\.ts\2/g;

const isStale = (source: string, target: string) => {
  try {
    return statSync(source).mtimeMs > statSync(target).mtimeMs;
  } catch {
    return true;
  }
};

/**
 * Compiles the emulators to plain JavaScript, mirroring the source tree, so that component processes
 * run on bare Node: a TypeScript loader costs every process ~35 MB and some start time. Only changed
 * files are recompiled. Returns the compiled component entry point.
 */
export async function compileEmulators(): Promise<string> {
  const sources = await glob(['emulators/**/*.{ts,cjs}', 'gateway-sim/**/*.ts', 'system/topology.json'], {
    cwd: ROOT,
    // Of the launcher's own folder, a component runs only its entry point, child.ts.
    ignore: ['**/*.test.ts', '**/test/**', '**/testing.ts', '**/bench.ts', 'emulators/stack/!(child).ts'],
  });
  mkdirSync(COMPILED_DIR, { recursive: true });
  // The mirror sits under node_modules, where Node stops looking for the project's "type": "module".
  writeFileSync(join(COMPILED_DIR, 'package.json'), '{ "type": "module" }\n');
  await Promise.all(
    sources.map(async (file) => {
      const source = join(ROOT, file);
      const target = join(COMPILED_DIR, file.replace(/\.ts$/, '.js'));
      if (!isStale(source, target)) return;
      mkdirSync(dirname(target), { recursive: true });
      if (!file.endsWith('.ts')) return copyFileSync(source, target);
      const { code } = await transform(readFileSync(source, 'utf8'), {
        loader: 'ts',
        format: 'esm',
        target: 'node20',
        sourcefile: relative(COMPILED_DIR, source),
      });
      writeFileSync(target, code.replace(relativeTs, '$1$2$3.js$2'));
    }),
  );
  return join(COMPILED_DIR, 'emulators', 'stack', 'child.js');
}
