/**
 * TypeScript modules of the project run on bare Node: each entry is bundled by esbuild into one
 * JavaScript module under node_modules/.cache/taskstack/bundles/ (packages stay external), and bundled
 * again only when one of its source files changed. A TypeScript loader (tsx) would cost every
 * `taskstack start` half a second and the launcher ~35 MB.
 *
 * Plain JavaScript: it is what runs before anything is compiled (emulators/stack/taskstack.mjs).
 */
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bundlesDir = join(root, 'node_modules', '.cache', 'taskstack', 'bundles');

/**
 * Each bundled module keeps its own `import.meta.url` (its source file's), so that paths it resolves
 * against itself (`new URL('../..', import.meta.url)`) mean what they mean in the source tree: every
 * module declares its URL, and `define` points `import.meta.url` at it (esbuild renames the one of
 * each module apart; strings that mention import.meta.url are left alone).
 * @type {import('esbuild').Plugin}
 */
const sourceUrls = {
  name: 'source-urls',
  setup(build) {
    build.onLoad({ filter: /\.(ts|mjs)$/ }, async (args) => ({
      contents: `const __sourceUrl = ${JSON.stringify(pathToFileURL(args.path).href)};\n${await readFile(args.path, 'utf8')}`,
      loader: args.path.endsWith('.ts') ? 'ts' : 'js',
    }));
  },
};

/** The bundle `pointer` names, when it exists and none of the sources it was made of changed since. */
function freshBundle(pointer) {
  try {
    const { main, inputs } = JSON.parse(readFileSync(pointer, 'utf8'));
    const built = statSync(main).mtimeMs;
    return inputs.every((input) => statSync(join(root, input)).mtimeMs <= built) ? main : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The bundle of TypeScript module `entry` (an absolute path), made now if it is missing or stale. Its
 * dynamic imports stay chunks of their own, loaded when first used (the launcher never loads the
 * emulators' own code, nor their packages).
 * @param {string} entry
 * @returns {Promise<string>} the path of the bundle's main module
 */
export async function bundle(entry) {
  const name = relative(root, entry).replaceAll('/', '__');
  const pointer = join(bundlesDir, `${name}.json`);
  const existing = freshBundle(pointer);
  if (existing) return existing;
  // Each build gets a folder of its own: a process may still be loading chunks of the previous one.
  const outdir = join(bundlesDir, name, `${Date.now()}-${process.pid}`);
  const esbuild = await import('esbuild');
  const { metafile } = await esbuild.build({
    absWorkingDir: root,
    entryPoints: { main: entry },
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'inline',
    metafile: true,
    logLevel: 'silent',
    define: { 'import.meta.url': '__sourceUrl' },
    plugins: [sourceUrls],
  });
  const main = join(outdir, 'main.mjs');
  // Named by a file replaced in one step, so a reader sees the old bundle or the new one, whole.
  const temporary = `${pointer}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify({ main, inputs: Object.keys(metafile.inputs) }));
  renameSync(temporary, pointer);
  // Older builds than the previous one are no longer loaded by anyone.
  const builds = readdirSync(join(bundlesDir, name)).sort();
  for (const old of builds.slice(0, -2))
    rmSync(join(bundlesDir, name, old), { recursive: true, force: true });
  return main;
}

/**
 * Imports TypeScript module `entry` (an absolute path) through its bundle.
 * @param {string} entry
 * @returns {Promise<Record<string, unknown>>}
 */
export async function importTypeScript(entry) {
  return import(pathToFileURL(await bundle(entry)).href);
}
