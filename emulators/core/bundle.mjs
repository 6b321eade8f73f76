/**
 * The project's modules run on bare Node from esbuild bundles under node_modules/.cache/taskstack/bundles/,
 * bundled again only when one of their sources changed: TypeScript without a loader (tsx would cost every
 * `taskstack start` half a second and each process ~35 MB), and packages in a few files instead of the
 * hundreds Node would otherwise load one by one.
 *
 * Plain JavaScript: it is what runs before anything is compiled (emulators/stack/taskstack.mjs).
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { oneCopyPerPackage } from '../../system/one-copy-per-package.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bundlesDir = join(root, 'node_modules', '.cache', 'taskstack', 'bundles');
// What makes a bundle besides its sources: a change to the bundler or its plugin changes every bundle.
const BUNDLER = ['./bundle.mjs', '../../system/one-copy-per-package.mjs'].map((path) =>
  relative(root, fileURLToPath(new URL(path, import.meta.url))),
);

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
      const { transform } = await importModule('esbuild');
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

/**
 * zod's `locales` (`z.locales`: the error messages in some fifty languages, half of zod's 627 kB in a
 * bundle) reduced to English, the one its schemas use and the only one this project says its errors in.
 * Every bundled process compiles what it holds: each `taskstack` command spent ~20 ms of CPU on the rest.
 * @type {import('esbuild').Plugin}
 */
const zodInEnglish = {
  name: 'zod-in-english',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.c?js$/ }, ({ importer }) =>
      /[\\/]zod[\\/]v4[\\/](classic|core)[\\/]/.test(importer)
        ? { path: join(dirname(importer), '../locales/index.js'), namespace: 'zod-in-english' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'zod-in-english' }, ({ path }) => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: dirname(path),
    }));
  },
};

/** @param {string} entry @param {'external' | 'bundle'} packages */
const bundleName = (entry, packages) =>
  `${relative(root, entry).replaceAll('/', '__')}${packages === 'bundle' ? '.packed' : ''}`;

/**
 * The file system's clock at its next tick, as read from a file written in folder `dir`: Linux dates a
 * file by a coarse clock (a tick of a few ms, behind `Date.now()`), so only a file's own time compares
 * with files' times. Waiting for the tick (at most 50 ms; a file system dating by seconds gives up)
 * tells a file saved just before a build, which is dated before this, from one saved while it runs.
 * @param {string} dir
 */
export function fileClock(dir) {
  const probe = join(dir, `.clock.${process.pid}`);
  const now = () => {
    writeFileSync(probe, '');
    return statSync(probe).mtimeMs;
  };
  try {
    const first = now();
    const until = Date.now() + 50;
    let time = first;
    while (time === first && Date.now() < until) time = now();
    return time;
  } finally {
    rmSync(probe, { force: true });
  }
}

/**
 * What a build that began at file time `began` (fileClock) read of `paths`, to compare at the next
 * start (`changedSince`): each one's mtime, or -1 for one dated since the build began or gone, whose text
 * the build may not hold (an edit saved while it ran, or within the clock's tick before).
 * @param {string[]} paths @param {number} began @returns {number[]}
 */
export function inputTimes(paths, began) {
  return paths.map((path) => {
    try {
      const { mtimeMs } = statSync(path);
      return mtimeMs < began ? mtimeMs : -1;
    } catch {
      return -1;
    }
  });
}

/**
 * Which of `paths` no longer have the time `times` noted of them (inputTimes): an edit moves a file's
 * time, to any date (a `git checkout`, an archive's or a copy's own date), or leaves it gone.
 * @param {string[]} paths @param {unknown} times @returns {string[]}
 */
export function changedSince(paths, times) {
  if (!Array.isArray(times) || times.length !== paths.length) return paths;
  return paths.filter((path, i) => {
    try {
      return statSync(path).mtimeMs !== times[i];
    } catch {
      return true;
    }
  });
}

/**
 * The outputs `pointer` names (output name → path), when they exist, were made from the same virtual
 * entries and options (`contentsHash`), and none of the sources they were made of changed since.
 */
function freshBuild(pointer, contentsHash) {
  try {
    const { mains, inputs, times, contents } = JSON.parse(readFileSync(pointer, 'utf8'));
    if (contents !== contentsHash || !Object.values(mains).every((main) => existsSync(main)))
      return undefined;
    const paths = inputs.map((/** @type {string} */ input) => join(root, input));
    return changedSince(paths, times).length === 0 ? mains : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Virtual entry modules: `virtual:NAME` is the TypeScript text `entries[NAME]`, resolving from `dir`.
 * @param {Record<string, string>} entries @param {string} dir @returns {import('esbuild').Plugin}
 */
const virtualEntries = (entries, dir) => ({
  name: 'virtual-entries',
  setup(build) {
    build.onResolve({ filter: /^virtual:/ }, (args) => ({ path: args.path.slice(8), namespace: 'virtual' }));
    build.onLoad({ filter: /.*/, namespace: 'virtual' }, (args) => ({
      contents: entries[args.path],
      loader: 'ts',
      resolveDir: dir,
    }));
  },
});

/** Builds under way in this process, by name: callers asking at once share one. */
const building = new Map();

/**
 * The outputs named `name`, one per entry point of `entryPoints` (output name → module), built now
 * unless a fresh build exists; answers their paths by output name.
 * @param {string} name
 * @param {Record<string, string>} entryPoints
 * @param {{ commonJs: boolean, packages: 'external' | 'bundle', external: string[], alias?: Record<string, string>, entries?: Record<string, string>, dir?: string, onBuild?: () => void }} options
 * @returns {Promise<Record<string, string>>}
 */
function build(name, entryPoints, options) {
  const pending = building.get(name) ?? buildNow(name, entryPoints, options);
  building.set(name, pending);
  return pending.finally(() => building.delete(name));
}

/** @param {string} name @param {Record<string, string>} entryPoints @param {Parameters<typeof build>[2]} options */
async function buildNow(
  name,
  entryPoints,
  { commonJs, packages, external, alias, entries, dir = root, onBuild },
) {
  const extension = commonJs ? '.cjs' : '.mjs';
  const pointer = join(bundlesDir, `${name}.json`);
  const contentsHash = createHash('sha256')
    .update(JSON.stringify({ entries, external, alias, oneCopyPerPackage: packages === 'bundle' }))
    .digest('hex');
  const existing = freshBuild(pointer, contentsHash);
  if (existing) return useBuild(existing);
  onBuild?.();
  // Each build gets a folder of its own: a process may still be loading chunks of the previous one.
  const outdir = join(bundlesDir, name, `${Date.now()}-${process.pid}`);
  writable(outdir);
  // Used from now on: another process's build finishing meanwhile prunes old builds, and must not
  // take this one while esbuild writes it (its process would then run a bundle that is gone).
  markUsed(outdir);
  // Before esbuild reads a source: an edit saved while it builds is dated after this.
  const began = fileClock(outdir);
  const esbuild = await importModule('esbuild');
  const { metafile } = await esbuild.build({
    absWorkingDir: root,
    entryPoints,
    outdir,
    outExtension: { '.js': extension },
    bundle: true,
    splitting: !commonJs,
    ...(packages === 'bundle'
      ? {
          // esbuild runs its own binary from its package folder: it is never bundled.
          external: ['esbuild', ...external],
          alias,
          // Bundled CommonJS packages require Node's built-ins; an ES module has no `require` of its own.
          // Bundled packages resolve against the bundle's own URL; CommonJS has no import.meta.
          // A CommonJS bundle's import() of what it does not contain becomes require(): a script compiled
          // from a code cache cannot call import() on Node 20 (see run-cached.cjs; importModule).
          ...(commonJs
            ? {
                define: { 'import.meta.url': '__bundleUrl' },
                banner: { js: "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
                supported: { 'dynamic-import': false },
              }
            : {
                banner: {
                  js: "import { createRequire as __bundleRequire } from 'node:module';const require = __bundleRequire(import.meta.url);",
                },
              }),
          // Some SDKs test `constructor.name`: keep the names esbuild would otherwise suffix.
          keepNames: true,
          // No comments: V8 keeps a module's source in memory, at two bytes a character for the whole
          // file once one character is outside Latin-1 (a dash in a comment will do).
          minifyWhitespace: true,
        }
      : { packages: 'external' }),
    platform: 'node',
    format: commonJs ? 'cjs' : 'esm',
    target: 'node20',
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'silent',
    plugins: [
      sourceUrls,
      ...(entries ? [virtualEntries(entries, dir)] : []),
      ...(packages === 'bundle' ? [oneCopyPerPackage(join(root, 'package-lock.json')), zodInEnglish] : []),
    ],
  });
  const mains = Object.fromEntries(
    Object.keys(entryPoints).map((output) => [output, join(outdir, `${output}${extension}`)]),
  );
  // Named by a file replaced in one step, so a reader sees the old build or the new one, whole.
  const temporary = `${pointer}.${process.pid}.tmp`;
  // Installed packages change only with the lockfile; virtual entries are checked by their hash.
  const inputs = Object.keys(metafile.inputs).filter(
    (input) => !input.includes('node_modules/') && !input.startsWith('virtual:'),
  );
  inputs.push('package-lock.json', ...BUNDLER);
  const times = inputTimes(
    inputs.map((input) => join(root, input)),
    began,
  );
  writeFileSync(temporary, JSON.stringify({ mains, inputs, times, contents: contentsHash }));
  renameSync(temporary, pointer);
  useBuild(mains);
  // Older builds go once no live process uses them. The previous one stays too: a process may have
  // just read the pointer to it and not yet marked it.
  const builds = readdirSync(join(bundlesDir, name)).sort();
  for (const old of builds.slice(0, -2))
    if (!inUse(join(bundlesDir, name, old)))
      rmSync(join(bundlesDir, name, old), { recursive: true, force: true });
  removeOrphans();
  return mains;
}

/**
 * Removes the bundles of modules that are gone (a test's module in a temporary folder, a deleted
 * source) once no live process uses them: nothing can ask for them again.
 */
function removeOrphans() {
  for (const file of readdirSync(bundlesDir)) {
    if (!file.endsWith('.json')) continue;
    const pointer = join(bundlesDir, file);
    const folder = pointer.slice(0, -'.json'.length);
    try {
      const { inputs } = JSON.parse(readFileSync(pointer, 'utf8'));
      if (inputs.every((/** @type {string} */ input) => existsSync(join(root, input)))) continue;
      if (readdirSync(folder).some((build) => inUse(join(folder, build)))) continue;
    } catch {
      continue; // being written, or removed meanwhile by another process
    }
    rmSync(folder, { recursive: true, force: true });
    rmSync(pointer, { force: true });
  }
}

/** Whether process `pid` is alive (EPERM: alive, another user's). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return /** @type {NodeJS.ErrnoException} */ (error).code === 'EPERM';
  }
}

/** Whether a live process marked build folder `outdir` as used. */
function inUse(outdir) {
  try {
    return readdirSync(join(outdir, '.users')).some((pid) => alive(Number(pid)));
  } catch {
    return false;
  }
}

/** Errors of a folder this user may not write in (another user's `node_modules`, a read-only mount). */
const NOT_WRITABLE = ['EACCES', 'EPERM', 'EROFS'];
const notWritable = (/** @type {unknown} */ error) =>
  NOT_WRITABLE.includes(/** @type {NodeJS.ErrnoException} */ (error).code ?? '');

/**
 * Makes folder `dir` for a build, or says in one line why it cannot: the bundles must live in the
 * project's `node_modules`, beside the packages they load.
 * @param {string} dir
 */
function writable(dir) {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    if (!notWritable(error)) throw error;
    throw new Error(
      `cannot write ${relative(root, bundlesDir)} (${/** @type {NodeJS.ErrnoException} */ (error).code}): ` +
        'the code taskstack runs is built there, beside the packages it loads; run it as the user who ' +
        'installed them (npm ci), or make that folder writable',
    );
  }
}

/**
 * Marks the build of `mains` as used by this process for as long as it lives (a stack restarts a
 * component from the build it started with, however many builds came since), and forgets users that
 * have exited, so that the marks stay as few as the live users. Answers `mains`. A user who may not
 * write there runs the build unmarked: it cannot remove builds either.
 * @param {Record<string, string>} mains
 */
function useBuild(mains) {
  markUsed(dirname(/** @type {string} */ (Object.values(mains)[0])));
  return mains;
}

/** useBuild's mark, on build folder `outdir`. @param {string} outdir */
function markUsed(outdir) {
  const users = join(outdir, '.users');
  try {
    mkdirSync(users, { recursive: true });
    writeFileSync(join(users, String(process.pid)), '');
    for (const pid of readdirSync(users)) if (!alive(Number(pid))) rmSync(join(users, pid), { force: true });
  } catch (error) {
    if (!notWritable(error)) throw error;
  }
}

/**
 * The bundle of module `entry` (an absolute path; TypeScript, an ES module, or CommonJS `.cjs`), made
 * now if it is missing or stale. An ES module's dynamic imports stay chunks of their own, loaded when
 * first used (the launcher never loads the emulators' own code, nor their packages); a `.cjs` entry
 * gives one CommonJS file. With `packages: 'bundle'` the packages it imports are bundled too, but for
 * `external` ones (optional dependencies that are not installed), and with each package named in
 * `alias` replaced by the module given for it. `onBuild` is called when a build starts (none is needed
 * while the bundle is fresh), for whoever waits to be told why this start takes longer.
 * @param {string} entry
 * @param {{ packages?: 'external' | 'bundle', external?: string[], alias?: Record<string, string>, onBuild?: () => void }} [options]
 * @returns {Promise<string>} the path of the bundle's main module
 */
export async function bundle(entry, { packages = 'external', external = [], alias, onBuild } = {}) {
  const commonJs = entry.endsWith('.cjs');
  const { main } = await build(
    bundleName(entry, packages),
    { main: entry },
    { commonJs, packages, external, alias, onBuild },
  );
  return /** @type {string} */ (main);
}

/**
 * One CommonJS file per entry of `entries` (output name → the text of a TypeScript module, resolving
 * its imports from folder `dir`), with the packages they import, made in one build named `name` (the
 * modules they share are read once). CommonJS, so that Node can run each from V8's code cache
 * (run-cached.cjs); rebuilt when a source or an entry's text changed. `onBuild` as for `bundle`.
 * @param {string} name
 * @param {string} dir
 * @param {Record<string, string>} entries
 * @param {() => void} [onBuild]
 * @returns {Promise<Record<string, string>>} the path of each output by name
 */
export function bundleEntries(name, dir, entries, onBuild) {
  const entryPoints = Object.fromEntries(Object.keys(entries).map((output) => [output, `virtual:${output}`]));
  return build(name, entryPoints, {
    commonJs: true,
    packages: 'bundle',
    external: [],
    entries,
    dir,
    onBuild,
  });
}

/**
 * `import(specifier)` (an absolute URL or a package name), also from a bundle run from V8's code cache,
 * whose own import() Node 20 cannot call: run-cached.cjs lends its own.
 * @param {string} specifier
 * @returns {Promise<Record<string, unknown>>}
 */
export function importModule(specifier) {
  const lent = globalThis[Symbol.for('taskstack.import')];
  return lent ? lent(specifier) : import(specifier);
}

/**
 * Stops esbuild's service process if a build in this process started it (it would idle beside the
 * stack, ~20 MB). Loading esbuild only to stop it would cost a start that built nothing ~60 ms. Builds
 * under way in this process (a watch's rebuild done while another stack of the same process builds)
 * end first: stopped under them, the service never answers them.
 */
export async function stopBuilding() {
  const require = createRequire(import.meta.url);
  if (!require.cache[require.resolve('esbuild')]) return;
  const esbuild = await importModule('esbuild');
  while (building.size > 0) await Promise.allSettled(building.values());
  await esbuild.stop();
}

/**
 * Keeps V8's code for what this process compiled so far, when it runs from run-cached.cjs (a no-op
 * otherwise): called once a component has started.
 */
export function saveCodeCache() {
  globalThis[Symbol.for('taskstack.saveCodeCache')]?.();
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
