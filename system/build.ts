/**
 * What the apps' builds (system/functions/build.ts, system/web/build.ts) share: how an app is bundled,
 * and writing esbuild's output into an app's dist/ the way a running reader can bear.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { parse } from 'acorn';
import type { BuildOptions, Metafile, OutputFile, Plugin } from 'esbuild';
import { glob } from 'tinyglobby';
import { escapeRegExp } from './one-copy-per-package.mjs';

const sameContent = (path: string, contents: Uint8Array) => {
  try {
    return Buffer.from(contents).equals(readFileSync(path));
  } catch {
    return false;
  }
};

/** Node loads this package as CommonJS whether it is imported or required: no `exports` map, not `type: module`. */
function plainCommonJs(requireFromApp: NodeJS.Require, name: string): boolean {
  try {
    const manifest = requireFromApp(`${name}/package.json`);
    return !manifest.exports && manifest.type !== 'module' && !String(manifest.main).endsWith('.mjs');
  } catch {
    return false; // an `exports` map that does not list package.json
  }
}

/**
 * Plain CommonJS packages left external are loaded with `require`, the same file Node's `import` would
 * load: importing CommonJS from an ES module first makes Node scan the package's source for its export
 * names (~50 ms for @azure/functions' 190 kB).
 */
function requireCommonJs(appDir: string, external: string[]): Plugin {
  const requireFromApp = createRequire(join(appDir, 'package.json'));
  const names = external.filter((name) => plainCommonJs(requireFromApp, name));
  const filter = new RegExp(`^(${names.map(escapeRegExp).join('|')})$`);
  return {
    name: 'require-commonjs',
    setup(build) {
      if (!names.length) return;
      build.onResolve({ filter }, ({ path, namespace }) =>
        namespace === 'require' ? { path, external: true } : { path, namespace: 'require' },
      );
      build.onLoad({ filter: /.*/, namespace: 'require' }, ({ path }) => ({
        contents: `module.exports = require(${JSON.stringify(path)});`,
      }));
    },
  };
}

/**
 * esbuild options every app shares: an ES module bundle for Node 20 holding the app's code and the
 * packages it only builds with (package.json `devDependencies`, e.g. the Azure SDKs); what package.json
 * `dependencies` names stays external and ships in the deployed node_modules. Loading a few bundled files
 * instead of the SDKs' hundreds of modules is most of an app's start time.
 */
export function bundleOptions(appDir: string): BuildOptions & { write: false; metafile: true } {
  const manifest = JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8'));
  const external = Object.keys(manifest.dependencies ?? {});
  return {
    absWorkingDir: appDir,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external,
    plugins: [requireCommonJs(appDir, external)],
    // Bundled CommonJS packages require Node's built-ins; an ES module has no `require` of its own.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);",
    },
    // Some SDKs test `constructor.name` (storage-blob's credential and policy factories): keep the names
    // esbuild would otherwise suffix where two bundled packages declare the same one.
    keepNames: true,
    // Stack traces still name the sources (with --enable-source-maps); their text is not needed for that,
    // and would double dist/ with the SDKs' sources.
    sourcemap: true,
    sourcesContent: false,
    // Which sources a build read: the launcher rebuilds only when one of them changed.
    metafile: true,
    write: false,
    logLevel: 'silent',
  };
}

/** What a build read and wrote: the launcher builds again only when a source changed or an output is gone. */
export interface BuildReport {
  sources: string[];
  outputs: string[];
}

const NOT_LATIN1 = /[^\0-\xff]/u;

/**
 * `code` (a module) with each character outside Latin-1 in its comments replaced by `?`, two for one
 * outside the BMP: each keeps its UTF-16 length, so the source maps' columns hold. V8 keeps a module's
 * source for as long as it runs, at one byte per character only when all of them are Latin-1. esbuild
 * escapes other characters in strings, templates and names, but not in regular expressions (left as
 * they are here) nor in the comments it keeps: one `’` in an SDK's comment had V8 hold a 1.6 MB chunk of
 * the function app as 3.3 MB.
 */
export function latin1Comments(code: string): string {
  const comments: [number, number][] = [];
  parse(code, {
    ecmaVersion: 'latest',
    sourceType: 'module',
    onComment: (_block, _text, start, end) => void comments.push([start, end]),
  });
  let result = '';
  let at = 0;
  for (const [start, end] of comments) {
    result +=
      code.slice(at, start) +
      code.slice(start, end).replace(new RegExp(NOT_LATIN1, 'gu'), (char) => '?'.repeat(char.length));
    at = end;
  }
  return result + code.slice(at);
}

/** An output's bytes as the app ships them: JavaScript with characters outside Latin-1 gets latin1Comments. */
const shipped = (file: OutputFile) =>
  file.path.endsWith('.js') && NOT_LATIN1.test(file.text)
    ? Buffer.from(latin1Comments(file.text))
    : file.contents;

const digest = (contents: Uint8Array) => createHash('sha256').update(contents).digest('base64');

/**
 * What was last shipped at each output path: esbuild's hash of the output, and a digest of what was
 * shipped for it. A rebuild after an edit (the watcher's) leaves the chunk of the SDKs as it was, and
 * acorn need not parse its megabytes again (~0.3 s of CPU each rebuild of the function app). Kept on
 * disk too (shippedRecord), for the next build in another process: the launcher's, then
 * `npm run package`'s (in a fresh process ~1.5 s of CPU for the function app, ~0.4 s for the web app).
 */
const lastShipped = new Map<string, { hash: string; digest: string }>();

/** What makes shipped bytes from an output: a record made by other code is not used. */
const SHIPPING = digest(Buffer.from(`${NOT_LATIN1}${latin1Comments}${shipped}`));

/**
 * Where the records of dist folder `distDir` are kept: beside the installed packages, as tools keep
 * their caches (node_modules/.cache/), or nowhere when the app has no node_modules above it.
 */
function shippedRecord(distDir: string): string | undefined {
  for (let dir = dirname(distDir); dir !== dirname(dir); dir = dirname(dir)) {
    if (!existsSync(join(dir, 'node_modules'))) continue;
    const name = relative(dir, distDir).split(sep).join('__');
    return join(dir, 'node_modules', '.cache', 'taskstack', 'shipped', `${name}.json`);
  }
  return undefined;
}

/** Record files this process has read: once each, later builds (the watcher's) know what they wrote. */
const recordsRead = new Set<string>();

/** Adds the records another process kept for `distDir` to this one's (its own are newer). */
function readShipped(record: string | undefined) {
  if (!record || recordsRead.has(record)) return;
  recordsRead.add(record);
  try {
    const kept = JSON.parse(readFileSync(record, 'utf8'));
    if (kept?.shipping !== SHIPPING) return;
    for (const [path, last] of Object.entries(kept.files as Record<string, { hash: string; digest: string }>))
      if (!lastShipped.has(path)) lastShipped.set(path, last);
  } catch {
    // None yet, or unreadable: every output is shipped as if new.
  }
}

/**
 * Keeps the records of `outputs` on disk. A record lost to another writer, or one this user may not
 * write (packages installed by another), only costs the next build a parse.
 */
function keepShipped(record: string | undefined, outputs: string[]) {
  if (!record) return;
  const files = Object.fromEntries(
    outputs.flatMap((path) => (lastShipped.has(path) ? [[path, lastShipped.get(path)]] : [])),
  );
  const temporary = `${record}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(record), { recursive: true });
    writeFileSync(temporary, JSON.stringify({ shipping: SHIPPING, files }));
    renameSync(temporary, record);
  } catch {
    rmSync(temporary, { force: true });
  }
}

/** Whether `file` is what was last shipped at its path, and that is still on disk. */
function shippedBefore(file: OutputFile): boolean {
  const last = lastShipped.get(file.path);
  if (last?.hash !== file.hash) return false;
  try {
    return digest(readFileSync(file.path)) === last.digest;
  } catch {
    return false;
  }
}

/**
 * Other hosts (parallel test files, a started app) may be loading dist/ meanwhile: only changed files are
 * replaced, each atomically, and stale ones removed afterwards, so a reader never sees a missing or
 * half-written file when the sources have not changed. Answers the sources the build read (installed
 * packages left out) and the files it wrote, as absolute paths.
 */
export async function writeBuildOutput(
  { outputFiles, metafile }: { outputFiles: OutputFile[]; metafile: Metafile },
  distDir: string,
): Promise<BuildReport> {
  const record = shippedRecord(distDir);
  readShipped(record);
  let shippedNew = false;
  for (const file of outputFiles) {
    if (shippedBefore(file)) continue;
    shippedNew = true;
    const contents = shipped(file);
    lastShipped.set(file.path, { hash: file.hash, digest: digest(contents) });
    if (sameContent(file.path, contents)) continue;
    mkdirSync(dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, contents);
    renameSync(temporary, file.path);
  }
  const fresh = new Set(outputFiles.map((file) => file.path));
  // Nothing shipped anew: the records on disk already say what is there.
  if (shippedNew) keepShipped(record, [...fresh]);
  for (const stale of await glob('**/*', { cwd: distDir, absolute: true })) {
    if (!fresh.has(stale) && !stale.endsWith('.tmp')) rmSync(stale, { force: true });
  }
  const appDir = dirname(distDir);
  // Files only: installed packages change with the lockfile, and `namespace:path` inputs are virtual.
  const sources = Object.keys(metafile.inputs)
    .filter((input) => !input.includes('node_modules/') && !/^[\w-]+:/.test(input))
    .map((input) => join(appDir, input));
  return { sources, outputs: [...fresh] };
}
