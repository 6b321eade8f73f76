/**
 * `npm run package`: each app of system/apps.json built by its build module, staged in
 * system/deploy/out/<app>/ and zipped to system/deploy/out/<app>.zip in the layout
 * `az functionapp deployment source config-zip` / `az webapp deploy --type zip` take: the app folder's
 * deployable files at the root (host.json, package.json, dist/, views/ …) and node_modules holding the
 * app's production dependencies, copied from the repository's installed node_modules (the same bytes the
 * embedded stack runs). Those are what the app's build leaves external (package.json `dependencies`); the
 * packages it bundles into dist/ (`devDependencies`, see system/build.ts) are not shipped again. Nothing
 * of the tests, the TypeScript sources or the build is included.
 */
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { zipSync } from 'fflate';
import { type AppDeclaration, type Apps, loadApps, repositoryRoot } from '../../emulators/core/apps.ts';
import { buildApp } from '../../emulators/stack/build-app.ts';
import { apimImportSet } from './apim.ts';
import { outDir } from './paths.ts';

const root = resolve(repositoryRoot);

/** What an app folder holds that is not deployed: tests, sources the build compiles, the build itself, local-only settings. */
const EXCLUDED = [
  /\.test\.ts$/,
  /^test(-support|-results)?(\/|\.ts$)/,
  /^bench\.ts$/,
  /^src\//,
  /^node_modules\//,
  /^local\.settings\.json$/,
  /^\.gitignore$/,
];

function filesOf(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesOf(path, base) : [relative(base, path).split(sep).join('/')];
  });
}

/** Where Node would find package `name` from `fromDir` (walking up node_modules folders to the repository root). */
function resolvePackage(name: string, fromDir: string): string | undefined {
  for (let dir = resolve(fromDir); dir.startsWith(root); dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === root) break;
  }
  return undefined;
}

/**
 * The installed package folders an app needs at run time: its dependencies and theirs (optional ones
 * when installed), each once. Paths are relative to the repository root, as Node resolves them.
 */
export function productionPackages(appDir: string): string[] {
  const found = new Set<string>();
  const visit = (packageDir: string, required: boolean) => {
    const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
    const needs = [
      ...Object.keys(manifest.dependencies ?? {}).map((name) => [name, true] as const),
      ...Object.keys(manifest.optionalDependencies ?? {}).map((name) => [name, false] as const),
      ...Object.keys(manifest.peerDependencies ?? {}).map((name) => [name, false] as const),
    ];
    for (const [name, mustExist] of needs) {
      const dir = resolvePackage(name, packageDir);
      if (!dir) {
        if (mustExist && required)
          throw new Error(`${name} (needed by ${manifest.name}) is not installed: run npm ci`);
        continue;
      }
      const path = relative(repositoryRoot, dir);
      if (found.has(path)) continue;
      found.add(path);
      visit(dir, required);
    }
  };
  visit(appDir, true);
  return [...found].sort();
}

/** Builds, stages and zips one app; returns the zip's path. */
async function packageApp(name: string, app: AppDeclaration, out: string): Promise<string> {
  const appDir = join(repositoryRoot, app.folder);
  if (app.build) await buildApp(appDir, app.build);
  const stage = join(out, name);
  rmSync(stage, { recursive: true, force: true });
  const files: Record<string, Uint8Array> = {};
  const add = (from: string, to: string) => {
    mkdirSync(dirname(join(stage, to)), { recursive: true });
    cpSync(from, join(stage, to));
    files[to] = readFileSync(from);
  };
  const buildModule = app.build?.replace(/^\.\//, '');
  for (const file of filesOf(appDir))
    if (file !== buildModule && !EXCLUDED.some((pattern) => pattern.test(file)))
      add(join(appDir, file), file);
  // A package's own nested node_modules are visited as packages of their own (only the needed ones).
  for (const packageDir of productionPackages(appDir))
    for (const file of filesOf(join(repositoryRoot, packageDir)))
      if (!file.startsWith('node_modules/'))
        add(join(repositoryRoot, packageDir, file), `${packageDir}/${file}`);
  // Sorted entries and a fixed date: the same app gives the same zip. Fastest deflate level: these zips
  // are built in CI on every run, and a deploy does not care about a few more megabytes.
  const entries = Object.fromEntries(
    Object.keys(files)
      .sort()
      .map((path) => [
        path,
        [files[path] as Uint8Array, { mtime: new Date('2000-01-01T00:00:00Z') }] as const,
      ]),
  );
  const zip = join(out, `${name}.zip`);
  writeFileSync(zip, zipSync(entries as Parameters<typeof zipSync>[0], { level: 1 }));
  return zip;
}

/**
 * Every app, each folder built once. Apps sharing a folder (web apps A and B) get one zip each, of the
 * same files: App Service deploys a zip per site, and what tells the apps apart is their settings.
 */
export async function packageApps(apps: Apps, out = outDir): Promise<Record<string, string>> {
  const first = new Map<string, string>(); // folder → the app packaged from it
  const zips: Record<string, string> = {};
  for (const [name, app] of Object.entries(apps)) {
    const same = first.get(app.folder);
    // The same files: a copy of the first app's stage and zip, not a second staging and deflate.
    zips[name] = same ? copyPackage(same, name, out) : await packageApp(name, app, out);
    if (!same) first.set(app.folder, name);
  }
  return zips;
}

/** App `to` staged and zipped as app `from` was; returns its zip's path. */
function copyPackage(from: string, to: string, out: string): string {
  rmSync(join(out, to), { recursive: true, force: true });
  cpSync(join(out, from), join(out, to), { recursive: true });
  const zip = join(out, `${to}.zip`);
  copyFileSync(join(out, `${from}.zip`), zip);
  return zip;
}

/** The APIM import set in <out>/apim/ (see apimImportSet); returns its folder, or undefined without system/gateway/. */
export function packageApim(out = outDir): string | undefined {
  const files = apimImportSet();
  if (!Object.keys(files).length) return undefined;
  const dir = join(out, 'apim');
  rmSync(dir, { recursive: true, force: true });
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const zip of Object.values(await packageApps(loadApps())))
    console.log(`${relative(repositoryRoot, zip)} (${Math.round(statSync(zip).size / 1024)} KiB)`);
  const apim = packageApim();
  if (apim) console.log(`${relative(repositoryRoot, apim)}/ (the API Management import set)`);
}
