/**
 * An esbuild plugin for every bundle that carries its packages: the apps' builds use it (web app:
 * system/web/build.ts), and so may any other bundler of this repository. Plain JavaScript, so that one
 * that runs before anything is compiled can load it too.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/**
 * `text` matched as is in a regular expression (esbuild's filters are Go's: the same escapes).
 * @param {string} text
 */
export const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The folder of the installed package holding `file`: the innermost `node_modules/<name>` (or `@scope/name`).
 * @param {string} file
 */
const packageDir = (file) => /^.*\/node_modules\/(?:@[^/]+\/)?[^/]+/.exec(file)?.[0];

/**
 * One copy of each package: npm installs the same version in several nested node_modules (mime-types
 * 3.0.2 and its mime-db under express, send, accepts and type-is), and each copy would otherwise be
 * bundled, loaded and build its tables again. Copies are the same when package-lock.json gives them the
 * same name, version and integrity (the same tarball); the first in sorted order is kept, so every build
 * makes the same bundle.
 * @param {string} lockfile
 * @returns {import('esbuild').Plugin}
 */
export function oneCopyPerPackage(lockfile) {
  const lockRoot = dirname(lockfile);
  /** @type {{ packages: Record<string, { version?: string, integrity?: string }> }} */
  const { packages } = JSON.parse(readFileSync(lockfile, 'utf8'));
  /** @param {string} path */
  const identity = (path) => {
    const entry = packages[path];
    return entry?.integrity && `${path.replace(/^.*node_modules\//, '')}@${entry.version} ${entry.integrity}`;
  };
  /** @type {Map<string, string>} */
  const kept = new Map();
  /** The names of the packages installed more than once the same: only their imports are redirected. */
  const copied = new Set();
  for (const path of Object.keys(packages).sort()) {
    const key = identity(path);
    if (key && !kept.has(key)) kept.set(key, path);
    else if (key) copied.add(path.replace(/^.*node_modules\//, ''));
  }
  // Each import the filter takes costs round trips between esbuild and Node (this callback, then
  // build.resolve): taking every package's doubled the web app's build. `name` or `name/sub/path`.
  const filter = new RegExp(`^(?:${[...copied].map(escapeRegExp).join('|')})(?:/|$)`);
  return {
    name: 'one-copy-per-package',
    setup(build) {
      if (copied.size === 0) return;
      build.onResolve({ filter }, async ({ path, importer, resolveDir, kind, pluginData }) => {
        if (pluginData === 'resolving') return undefined;
        const resolved = await build.resolve(path, { importer, resolveDir, kind, pluginData: 'resolving' });
        const dir = packageDir(resolved.path);
        const key = dir && identity(relative(lockRoot, dir));
        if (resolved.errors.length || resolved.external || !dir || !key) return resolved;
        return {
          ...resolved,
          path: join(lockRoot, /** @type {string} */ (kept.get(key))) + resolved.path.slice(dir.length),
        };
      });
    },
  };
}
