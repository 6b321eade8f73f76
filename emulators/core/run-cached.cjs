// `node run-cached.cjs [--cache=NAME] BUNDLE [ARGS…]` runs the CommonJS bundle BUNDLE as if it were the
// main script (`node BUNDLE ARGS…`), compiled from V8's code cache kept beside it (BUNDLE.v8cache, or
// BUNDLE.NAME.v8cache): a component's process then skips most of the parsing and compiling of its
// bundle, about half of loading it (Node 20 has no compile cache of its own; Node 22's
// module.enableCompileCache does the same). A cache holds what the start that wrote it compiled, so
// processes of one bundle whose starts run different code (hosts of different apps) keep one each.
//
// The bundle runs as Node's CommonJS loader runs a file (the same function wrapper, its own module
// and require). Node 20 loses the import() callback of a script compiled from a cache
// (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), so the bundle imports what it does not contain through
// this file's own import(), lent as globalThis[Symbol.for('taskstack.import')] (importModule in
// bundle.mjs). The cache is written when the bundle asks for it, once the process has done its
// start-up work (so the functions it compiled are in it), and only if there was none or V8 refused it
// (another Node, other flags, a rebuilt bundle).
'use strict';
const { readFileSync, renameSync, writeFileSync } = require('node:fs');
const Module = require('node:module');
const { dirname, resolve } = require('node:path');
const vm = require('node:vm');

const named = /^--cache=([\w-]+)$/.exec(process.argv[2] ?? '');
if (named) process.argv.splice(2, 1);
const bundle = resolve(process.argv[2] ?? '');
// The bundle sees itself as the main script, with its own arguments: `node BUNDLE ARGS…`.
process.argv.splice(1, 2, bundle);
const cachePath = named ? `${bundle}.${named[1]}.v8cache` : `${bundle}.v8cache`;

/** The bundle compiled, from the cache if V8 takes it; the cache's bytes are not kept once used. */
function compile() {
  let cachedData;
  try {
    cachedData = readFileSync(cachePath);
  } catch {
    // No cache yet: compile from source.
  }
  const script = new vm.Script(Module.wrap(readFileSync(bundle, 'utf8')), { filename: bundle, cachedData });
  return { script, fromCache: cachedData !== undefined && !script.cachedDataRejected };
}
const { script, fromCache } = compile();
globalThis[Symbol.for('taskstack.import')] = (specifier) => import(specifier);

let saved = fromCache;
/** Called by the bundle once it has started (see child.ts): writes the cache, whole or not at all. */
globalThis[Symbol.for('taskstack.saveCodeCache')] = () => {
  if (saved) return;
  saved = true;
  try {
    const temporary = `${cachePath}.${process.pid}.tmp`;
    writeFileSync(temporary, script.createCachedData());
    renameSync(temporary, cachePath);
  } catch {
    // Only a cache: the next start compiles from source again.
  }
};

const main = new Module(bundle, null);
main.filename = bundle;
main.paths = Module._nodeModulePaths(dirname(bundle));
process.mainModule = main;
script.runInThisContext()(main.exports, Module.createRequire(bundle), main, bundle, dirname(bundle));
