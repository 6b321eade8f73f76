/**
 * The project's modules run on bare Node from esbuild bundles under node_modules/.cache/taskstack/bundles/,
 * bundled again only when one of their sources changed: TypeScript without a loader (tsx would cost every
 * `taskstack start` half a second and each process ~35 MB), and packages in a few files instead of the
 * hundreds Node would otherwise load one by one.
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
 * Each of the project's modules keeps its own `import.meta.url` (its source file's), so that paths it
 * resolves against itself (`new URL('../..', import.meta.url)`) mean what they mean in the source tree.
 * Packages, when bundled, keep the bundle's: they only resolve other packages against it.
 * @type {import('esbuild').Plugin}
 */
const sourceUrls = {
  name: 'source-urls',
  setup(build) {
    build.onLoad({ filter: /\.(ts|mjs)$/ }, async (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const { transform } = await import('esbuild');
      const { code } = await transform(await readFile(args.path, 'utf8'), {
        loader: args.path.endsWith('.ts') ? 'ts' : 'js',
        define: { 'import.meta.url': '__sourceUrl' },
        sourcefile: args.path,
        sourcemap: 'inline',
      });
      return {
        contents: `const __sourceUrl = ${JSON.stringify(pathToFileURL(args.path).href)};${code}`,
        loader: 'js',
      };
    });
  },
};

/** @param {string} entry @param {'external' | 'bundle'} packages */
const bundleName = (entry, packages) =>
  `${relative(root, entry).replaceAll('/', '__')}${packages === 'bundle' ? '.packed' : ''}`;

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
 * The bundle of module `entry` (an absolute path; TypeScript, an ES module, or CommonJS `.cjs`), made
 * now if it is missing or stale. An ES module's dynamic imports stay chunks of their own, loaded when
 * first used (the launcher never loads the emulators' own code, nor their packages). With
 * `packages: 'bundle'` the packages it imports are bundled too, but for `external` ones (optional
 * dependencies that are not installed).
 * @param {string} entry
 * @param {{ packages?: 'external' | 'bundle', external?: string[] }} [options]
 * @returns {Promise<string>} the path of the bundle's main module
 */
export async function bundle(entry, { packages = 'external', external = [] } = {}) {
  const commonJs = entry.endsWith('.cjs');
  const extension = commonJs ? '.cjs' : '.mjs';
  const name = bundleName(entry, packages);
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
    outExtension: { '.js': extension },
    bundle: true,
    splitting: !commonJs,
    ...(packages === 'bundle'
      ? {
          // esbuild runs its own binary from its package folder: it is never bundled.
          external: ['esbuild', ...external],
          // Bundled CommonJS packages require Node's built-ins; an ES module has no `require` of its own.
          ...(!commonJs && {
            banner: {
              js: "import { createRequire as __bundleRequire } from 'node:module';const require = __bundleRequire(import.meta.url);",
            },
          }),
          // Some SDKs test `constructor.name`: keep the names esbuild would otherwise suffix.
          keepNames: true,
        }
      : { packages: 'external' }),
    platform: 'node',
    format: commonJs ? 'cjs' : 'esm',
    target: 'node20',
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'silent',
    plugins: [sourceUrls],
  });
  const main = join(outdir, `main${extension}`);
  // Named by a file replaced in one step, so a reader sees the old bundle or the new one, whole.
  const temporary = `${pointer}.${process.pid}.tmp`;
  // Installed packages change only with the lockfile.
  const inputs = Object.keys(metafile.inputs).filter((input) => !input.includes('node_modules/'));
  writeFileSync(temporary, JSON.stringify({ main, inputs: [...inputs, 'package-lock.json'] }));
  renameSync(temporary, pointer);
  // Builds older than the previous one go after a day: a stack started earlier may still load their
  // chunks (a component restarting loads its chunk again).
  const builds = readdirSync(join(bundlesDir, name)).sort();
  for (const old of builds.slice(0, -2))
    if (Date.now() - Number(old.split('-')[0]) > 86_400_000)
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

/**
 * The files (relative to the repository root, with package-lock.json for the packages) that the
 * latest bundle of `entry` was made of.
 * @param {string} entry
 * @param {'external' | 'bundle'} [packages]
 * @returns {string[]}
 */
export function bundleInputs(entry, packages = 'external') {
  return JSON.parse(readFileSync(join(bundlesDir, `${bundleName(entry, packages)}.json`), 'utf8')).inputs;
}
