/**
 * Builds the app as `npm run build` does before App Service runs `npm start`: src/server.ts (and what it
 * imports, including the modules it shares with the function app) → dist/server.js, an ES module for
 * Node 20 with everything it needs bundled in (system/build.ts): the Azure SDKs, Express and its
 * middleware. The pug views (views/, their source) are compiled here by pug's own compiler into template
 * functions in the bundle, so pug is not loaded, nor a view compiled, when the app runs; a view pug
 * refuses fails the build.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import pug from 'pug';
import { type BuildReport, bundleOptions, writeBuildOutput } from '../build.ts';
import { oneCopyPerPackage } from '../one-copy-per-package.mjs';

const appDir = fileURLToPath(new URL('.', import.meta.url));
// The repository's lockfile describes the node_modules the build bundles from.
const repositoryRoot = join(appDir, '../..');

/**
 * `import render from '…/x.pug'` is that view compiled by pug into `render(locals) → HTML`, the function
 * `res.render` would have compiled at the first request (the same compiler, so the same HTML). The
 * views a view extends or includes are added to `dependencies`.
 */
export function pugViews(dependencies: Set<string>): Plugin {
  return {
    name: 'pug-views',
    setup(build) {
      build.onLoad({ filter: /\.pug$/ }, ({ path }) => {
        const compiled = pug.compileClientWithDependenciesTracked(readFileSync(path, 'utf8'), {
          filename: path,
          name: 'render',
          // Without line tracking, which would also write the build machine's paths into the bundle.
          compileDebug: false,
        });
        for (const dependency of compiled.dependencies) dependencies.add(dependency);
        return { contents: `${compiled.body}\nexport default render;\n`, loader: 'js' };
      });
    },
  };
}

/**
 * dist/ is written as system/build.ts says: a web app started meanwhile never reads half a file.
 * Answers what it read and wrote (for the launcher, which builds again only when needed).
 */
export async function buildWebApp(): Promise<BuildReport> {
  const views = new Set<string>();
  const options = bundleOptions(appDir);
  const result = await build({
    ...options,
    plugins: [
      ...(options.plugins ?? []),
      oneCopyPerPackage(join(repositoryRoot, 'package-lock.json')),
      pugViews(views),
    ],
    entryPoints: ['src/server.ts'],
    outdir: 'dist',
    // What only one variant needs (server.ts imports it when chosen) goes to chunks of its own.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
  });
  const report = await writeBuildOutput(result, join(appDir, 'dist'));
  return { ...report, sources: [...new Set([...report.sources, ...views])] };
}

/** The launcher builds every app through its build module's default export. */
export default buildWebApp;

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildWebApp();
