import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { repositoryRoot } from '../core/apps.ts';
import { bundleInputs, changedSince, fileClock, importTypeScript, inputTimes } from '../core/bundle.mjs';
import { writeFileAtomic } from '../core/files.ts';

/**
 * Runs an app's build module (its default export), as `npm run build` does before the app starts or is
 * packaged; answers what the build says it read and wrote (`{ sources, outputs }`), if it says. The module is TypeScript;
 * it runs through its bundle, so bare Node can run it too.
 */
export async function buildApp(dir: string, module: string): Promise<unknown> {
  const { default: build } = await importTypeScript(join(dir, module));
  if (typeof build !== 'function')
    throw new Error(`${join(dir, module)} has no default export to build with`);
  try {
    return await build();
  } catch (error) {
    // The build's own message names files from the app's folder (src/…), which both apps have.
    throw new Error(`building ${relative(repositoryRoot, dir)} failed: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** Where the launcher's build step notes the last build of app `dir` by its build `module`. */
export function buildStamp(dir: string, module: string): string {
  const name = relative(repositoryRoot, join(dir, module)).replaceAll('/', '__');
  return join(repositoryRoot, 'node_modules', '.cache', 'taskstack', 'builds', `${name}.json`);
}

/** What the last build of app `dir` by `module` read and wrote, from its stamp; undefined if unknown. */
function lastBuild(dir: string, module: string) {
  try {
    const last = JSON.parse(readFileSync(buildStamp(dir, module), 'utf8'));
    if (Array.isArray(last.inputs) && Array.isArray(last.folders) && Array.isArray(last.outputs))
      return last as { inputs: string[]; folders: string[]; times: unknown; outputs: string[] };
  } catch {
    // No stamp yet, or an unreadable one: build.
  }
  return undefined;
}

/**
 * What changed in app `dir` since its last build by `module` (as its stamp says; nothing without one):
 * the sources whose time moved or that are gone, and the files made or moved in beside them since (a new
 * function, which a build finds by a glob), found by their folder's time, which moves when a file in it
 * is made or removed, then by their own ctime.
 */
export function changesSinceBuild(dir: string, module: string): string[] {
  const last = lastBuild(dir, module);
  return last ? changesSince(last) : [];
}

function changesSince(last: NonNullable<ReturnType<typeof lastBuild>>): string[] {
  const times = Array.isArray(last.times) ? (last.times as number[]) : [];
  const read = new Set(last.inputs);
  return changedSince([...last.inputs, ...last.folders], times).flatMap((path) => {
    if (read.has(path)) return [path];
    const folderTime = times[last.inputs.length + last.folders.indexOf(path)] ?? -1;
    return entriesOf(path).filter((entry) => !read.has(entry) && changedAfter(entry, folderTime));
  });
}

const entriesOf = (folder: string) => {
  try {
    return readdirSync(folder).map((name) => join(folder, name));
  } catch {
    return []; // gone: its files were sources, and say so
  }
};

/** Whether `path` was made, written or moved after time `time` (a file's ctime cannot be set back). */
const changedAfter = (path: string, time: number) => {
  try {
    return statSync(path).ctimeMs > time;
  } catch {
    return false;
  }
};

/**
 * The launcher's build step: as `buildApp`, but skipped while nothing the last build read changed —
 * the sources its build module answered, the build module's own, package-lock.json — nor was a file
 * made beside those sources, and all it wrote is still there, as an incremental `tsc --build` would. A
 * start then costs no bundling of the apps' SDKs. A build module that answers nothing is run every
 * time. Answers what the build read (absolute paths), if its module says.
 */
export async function buildAppIfChanged(dir: string, module: string): Promise<string[] | undefined> {
  const last = lastBuild(dir, module);
  if (last && changesSince(last).length === 0 && last.outputs.every(existsSync)) return last.inputs;
  return buildAppAndStamp(dir, module);
}

/**
 * `buildApp`, noting what it read and wrote for `buildAppIfChanged`; answers what it read. The watcher
 * (watch.ts) builds this way whatever the stamp says: a file no build has read yet (a new function) changed.
 */
export async function buildAppAndStamp(dir: string, module: string): Promise<string[] | undefined> {
  const stamp = buildStamp(dir, module);
  mkdirSync(dirname(stamp), { recursive: true });
  // Before the build reads a source: an edit saved while it builds is dated after this.
  const began = fileClock(dirname(stamp));
  const report = (await buildApp(dir, module)) as { sources?: string[]; outputs?: string[] } | undefined;
  if (!Array.isArray(report?.sources) || !Array.isArray(report.outputs)) return undefined;
  const own = bundleInputs(join(dir, module)).map((path) => join(repositoryRoot, path));
  const inputs = [...new Set([...report.sources, ...own])];
  const folders = [...new Set(report.sources.map((path) => dirname(path)))];
  const times = inputTimes([...inputs, ...folders], began);
  // Readable by all, as the build it describes: another user's start can then use that build.
  writeFileAtomic(stamp, JSON.stringify({ inputs, folders, times, outputs: report.outputs }), 0o644);
  return inputs;
}
