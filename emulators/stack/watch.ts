/**
 * Reloading the apps on edit, as `func start` does for a function app (the host's file watcher) and
 * nodemon or `node --watch` for an Express app: a change in an app's folder rebuilds the app (its build
 * module, as the start did) and restarts the components that run it. Nothing else restarts. A build that
 * fails keeps the running app.
 */
import { existsSync, type FSWatcher, readdirSync, statSync, watch } from 'node:fs';
import { basename, dirname, extname, join, relative, sep } from 'node:path';
import { repositoryRoot } from '../core/apps.ts';
import { stopBuilding } from '../core/bundle.mjs';
import { type FileWatching, hostFileWatching } from '../functions-host/config.ts';
import { buildAppAndStamp, changesSinceBuild } from './build-app.ts';
import type { ComponentProcess } from './component.ts';

/** What the watcher needs of a component (component.ts). */
export type RunningApp = Pick<ComponentProcess, 'name' | 'note' | 'restart'>;

/** An app as the watcher sees it: its folder and build module, and the components that run it. */
export interface WatchedApp {
  dir: string;
  build?: string;
  /** What its last build read (absolute paths), if its build module says; else every file concerns it. */
  inputs?: string[];
  components: RunningApp[];
  /** What its components say before they restart. */
  restartLine: string;
  /** A function app: its host.json's `fileWatchingEnabled`, `watchDirectories` and `watchFiles` apply. */
  functionApp?: boolean;
  /** A function app's settings (its component's), whose `AzureFunctionsJobHost__…` override those. */
  settings?: Record<string, string>;
}

/** What each host says before it restarts for a change: the Functions host's words, and nodemon's. */
export const RESTART_LINE = {
  functions: 'Host configuration has changed. Signaling restart',
  appservice: 'restarting due to changes…',
} as const;

/**
 * How long the folder must be quiet before a rebuild: an editor's save (or a formatter, or a `git
 * checkout`) writes several files within milliseconds, which make one rebuild. The Functions host waits
 * 300 ms after a change to its worker's files, 500 ms after one to host.json.
 */
const QUIET_MS = 300;

/** Files of an app's folder that configure its host rather than feed its build. */
const SETTINGS_FILES = ['host.json', 'package.json', 'local.settings.json'];

const shown = (path: string) => {
  const inProject = relative(repositoryRoot, path);
  return inProject.startsWith(`..${sep}`) ? path : inProject;
};

class AppWatch {
  inputs: Set<string> | undefined;
  /** Beside which sources a new file of theirs concerns the app: `dir|.ext` of each source in a subfolder. */
  #kinds = new Set<string>();
  pending = new Map<string, 'Created' | 'Changed' | 'Deleted'>();
  timer: NodeJS.Timeout | undefined;
  /** The rounds run one after another: a change during a rebuild makes another once it is done. */
  queue = Promise.resolve();

  /** A function app's host.json settings, read again after each round (a host.json change is one). */
  fileWatching: FileWatching | undefined;

  constructor(readonly app: WatchedApp) {
    this.setInputs(app.inputs);
    this.readHostJson();
  }

  readHostJson() {
    this.fileWatching = this.app.functionApp ? hostFileWatching(this.app.dir, this.app.settings) : undefined;
  }

  /** Whether its changes reload it: not a function app whose host.json says `fileWatchingEnabled: false`. */
  get enabled(): boolean {
    return this.fileWatching?.enabled !== false;
  }

  setInputs(inputs: string[] | undefined) {
    this.inputs = inputs && new Set(inputs);
    this.#kinds = new Set(
      (inputs ?? [])
        .filter((path) => dirname(path) !== this.app.dir && !relative(this.app.dir, path).startsWith('..'))
        .map((path) => `${dirname(path)}|${extname(path)}`),
    );
  }

  /**
   * Whether a change of `path` concerns the app: a file its build read, a settings file of its host, or a
   * new file of a kind its build reads beside those (a new function). Not what a build writes (dist/),
   * nor an editor's own files (`.x.swp`, `x.ts~`), nor a file beside them that no build reads (a test).
   */
  concerns(path: string): boolean {
    if (!this.enabled) return false;
    if (this.inputs?.has(path)) return true;
    const inFolder = relative(this.app.dir, path);
    if (inFolder.startsWith(`..${sep}`)) return false;
    const [top = ''] = inFolder.split(sep);
    if (top === 'dist' || top === 'node_modules' || basename(path).startsWith('.')) return false;
    if (!this.inputs || SETTINGS_FILES.includes(inFolder)) return true;
    if (this.#watchedByHost(inFolder, top)) return true;
    return this.#kinds.has(`${dirname(path)}|${extname(path)}`);
  }

  /**
   * A file in one of host.json's `watchDirectories` (the runtime compares the top folder's name, as
   * written) or named in its `watchFiles` (the runtime compares the name in any case, in any folder).
   */
  #watchedByHost(inFolder: string, top: string): boolean {
    if (!this.fileWatching) return false;
    if (inFolder !== top && this.fileWatching.directories.includes(top)) return true;
    const name = basename(inFolder).toLowerCase();
    return this.fileWatching.files.some((file) => file.toLowerCase() === name);
  }

  /** Notes a change of `path` (fs.watch's `rename` is a file made, replaced or removed). */
  note(path: string, event: string) {
    const type = !existsSync(path)
      ? 'Deleted'
      : event === 'change' || this.inputs?.has(path)
        ? 'Changed'
        : 'Created';
    // A file made and then written within the burst was made.
    if (!(type === 'Changed' && this.pending.get(path) === 'Created')) this.pending.set(path, type);
  }
}

export interface Watcher {
  /** The folders of the apps it reloads (not a function app whose host.json turned watching off). */
  folders: string[];
  /** Stops watching; resolves once a rebuild and restart under way are done. */
  close(): Promise<void>;
}

/**
 * Watches each app's folder. `restartable` says whether a component is to be restarted (not one stopped
 * on purpose). Each change is said as the Functions host says it, in the log of each component of its app.
 */
export function watchApps(
  apps: WatchedApp[],
  restartable: (component: RunningApp) => boolean = () => true,
): Watcher {
  const watches = apps.map((app) => new AppWatch(app));
  let closed = false;
  // esbuild's service (~20 MB) is stopped once no rebuild runs, as after the start; the next starts it again.
  let building = 0;
  let stopping = Promise.resolve();

  /**
   * Says `text` in the log of each component of the app, and once on the console (web apps A and B are
   * one build): under the first one's name.
   */
  const say = (watch: AppWatch, text: string, problem = false) => {
    for (const [i, component] of watch.app.components.filter(restartable).entries())
      for (const line of text.split('\n')) component.note(line, { problem, console: i === 0 });
  };

  async function rebuild(watch: AppWatch): Promise<boolean> {
    const { dir, build } = watch.app;
    if (!build) return true;
    await stopping;
    building++;
    try {
      watch.setInputs(await buildAppAndStamp(dir, build));
      return true;
    } catch (error) {
      // A stop (Ctrl-C) also ends esbuild's service, and so the build under way: nothing to say.
      if (closed) return false;
      // One block: the build's own message (the file, line and column of what it refused).
      say(watch, `${(error as Error).message}\nthe running app is kept until a change builds`, true);
      return false;
    } finally {
      if (--building === 0) stopping = stopBuilding().catch(() => {});
    }
  }

  async function round(watch: AppWatch) {
    if (closed || watch.pending.size === 0) return;
    const changes = [...watch.pending];
    watch.pending.clear();
    for (const [path, type] of changes)
      say(watch, `File change of type '${type}' detected for '${shown(path)}'`);
    const built = await rebuild(watch);
    watch.readHostJson();
    if (!built || closed) return;
    const restarting = watch.app.components.filter(restartable);
    for (const component of restarting) component.note(watch.app.restartLine);
    await Promise.all(
      restarting.map(async (component) => {
        if (!(await component.restart()))
          component.note('it stays down until a change builds', { problem: true });
      }),
    );
  }

  const changed = (path: string, event: string) => {
    for (const watch of watches.filter((watch) => watch.concerns(path))) {
      watch.note(path, event);
      clearTimeout(watch.timer);
      watch.timer = setTimeout(() => {
        watch.queue = watch.queue.then(() => round(watch));
      }, QUIET_MS);
    }
  };

  // One tree per folder: web apps A and B are one folder; a change there may concern another app too
  // (web's build reads the function app's src/lib).
  const trees = [...new Set(apps.map((app) => app.dir))].map((dir) =>
    watchTree(dir, changed, (error) => {
      for (const watch of watches.filter((watch) => watch.app.dir === dir))
        say(watch, `no longer watching ${shown(dir)}: ${error.message}`, true);
    }),
  );

  // An edit saved after the start's build read the app and before these watchers began: its build's
  // stamp tells (build-app.ts). The watchers are already up, so no edit falls between the two.
  for (const { app } of watches)
    if (app.build) for (const path of changesSinceBuild(app.dir, app.build)) changed(path, 'rename');

  return {
    folders: [...new Set(watches.filter((watch) => watch.enabled).map((watch) => watch.app.dir))],
    async close() {
      closed = true;
      for (const tree of trees) tree.close();
      for (const watch of watches) clearTimeout(watch.timer);
      await Promise.all(watches.map((watch) => watch.queue));
      await stopping;
    },
  };
}

/** Folders no build reads from: packages, and hidden ones (.git); `dist`, what builds write, at the top. */
const unwatched = (name: string, top: boolean) =>
  name === 'node_modules' || name.startsWith('.') || (top && name === 'dist');

const isFolder = (path: string) => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
};

/**
 * Watches `root` and each folder below it, one watcher per folder, and folders made later too. Not
 * Node's recursive watch: on Linux it follows each file's first inode, so a file saved by replacing it
 * (written as a copy, renamed over: vim, `sed -i`, an IDE's safe write) was heard once, and never again.
 * A folder's watcher hears its files by name, whatever inode they have.
 */
function watchTree(
  root: string,
  changed: (path: string, event: string) => void,
  failed: (error: Error) => void,
) {
  const watchers = new Map<string, FSWatcher>();
  const forget = (dir: string) => {
    for (const [path, watcher] of watchers)
      if (path === dir || path.startsWith(`${dir}${sep}`)) {
        watcher.close();
        watchers.delete(path);
      }
  };
  /** `made`: a folder made after the start, whose files (written before its watcher) are changes too. */
  const add = (dir: string, made: boolean) => {
    const watcher = watch(dir, (event, name) => {
      if (!name) return;
      const path = join(dir, name);
      if (event === 'rename' && watchers.has(path) && !isFolder(path)) forget(path);
      else if (event === 'rename' && !watchers.has(path) && !unwatched(name, dir === root) && isFolder(path))
        return add(path, true);
      changed(path, event);
    });
    watcher.on('error', (error) => (dir === root ? failed(error) : forget(dir)));
    watchers.set(dir, watcher);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && !unwatched(entry.name, dir === root)) add(path, made);
      else if (made) changed(path, 'rename');
    }
  };
  add(root, false);
  return { close: () => forget(root) };
}
