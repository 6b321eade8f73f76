/**
 * Reload on edit (watch.ts): a stack started with `watch` on a copy of the system's apps (with code of
 * the test's own: a function, a web page), in a temporary folder, rebuilds an app and restarts only its
 * components when a file of its folder changes.
 */
import { cpSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadApps, repositoryRoot } from '../core/apps.ts';
import { testDataDir, waitFor } from '../core/testing.ts';
import { buildAppAndStamp, buildStamp } from './build-app.ts';
import { type Stack, start } from './launcher.ts';
import { startCli } from './test-support.ts';
import { RESTART_LINE, type RunningApp, watchApps } from './watch.ts';

const data = testDataDir();
/** The stamps of builds of apps in temporary folders: gone with them. */
const startedStamps: string[] = [];
afterAll(() => {
  data.remove();
  for (const stamp of startedStamps) rmSync(stamp, { force: true });
});
const project = join(data.dir, 'project');
const system = (...path: string[]) => join(project, 'system', ...path);
let stack: Stack;

/** A component's console log (the functions host's is `functions-host`). */
const log = (name: string) =>
  readFileSync(stack.description.logs[name === 'functions' ? 'functions-host' : name] as string, 'utf8');
const count = (text: string, part: string) => text.split(part).length - 1;
const functionsUrl = (path: string) => `${stack.description.apps.functions?.url}/api/${path}`;

/** An anonymous HTTP function `name` answering `body`. */
const httpFunction = (name: string, body: string) => `import { app } from '@azure/functions';
app.http('${name}', { authLevel: 'anonymous', handler: async () => ({ body: '${body}' }) });
`;
const writeFunction = (name: string, body: string) =>
  writeFileSync(system('functions', 'src', 'functions', `${name}.ts`), httpFunction(name, body));

/** The web app's entry point (src/server.ts, as the system's): its index view, with no tasks, on PORT. */
const webServer = `import { createServer } from 'node:http';
import index from '../views/index.pug';

createServer((_request, response) => {
  response.setHeader('content-type', 'text/html; charset=utf-8');
  response.end(index({ tasks: [], values: {} }));
}).listen(Number(process.env.PORT), process.env.HOST);
`;

/** Waits until GET `url` answers `text` (a rebuild takes seconds, the web app's more on a busy machine). */
const answers = (url: string, text: string) =>
  waitFor(
    `${url} to answer ${text}`,
    async () => {
      const response = await fetch(url).catch(() => undefined);
      return response?.ok === true && (await response.text()).includes(text);
    },
    60_000,
  );

describe('a stack started with watch', () => {
  beforeAll(async () => {
    // The apps' build modules, settings and views, beside the project's packages and lockfile, with code
    // of the test's own: the function app runs one function, not the system's nine, and the web app
    // serves its index view on node:http, not the system's server. Those bundle the Azure SDKs (and the
    // web app Express): ~1.6 s of esbuild's CPU a build of the function app and ~2.4 s of the web app's,
    // eight and three builds here, and each restart loaded them. What this file proves is the watcher's
    // and the launcher's, the same for any code an app's build bundles.
    for (const app of ['functions', 'web'])
      cpSync(join(repositoryRoot, 'system', app), system(app), {
        recursive: true,
        filter: (path) => !/\/system\/\w+\/(dist|node_modules|src)$/.test(path),
      });
    mkdirSync(system('functions', 'src', 'functions'), { recursive: true });
    writeFunction('Started', 'started');
    mkdirSync(system('web', 'src'));
    writeFileSync(system('web', 'src', 'server.ts'), webServer);
    for (const file of ['build.ts', 'one-copy-per-package.mjs', 'one-copy-per-package.d.mts'])
      cpSync(join(repositoryRoot, 'system', file), system(file));
    symlinkSync(join(repositoryRoot, 'node_modules'), join(project, 'node_modules'));
    symlinkSync(join(repositoryRoot, 'package-lock.json'), join(project, 'package-lock.json'));
    const { functions, web } = loadApps();
    const folder = (app: string) => relative(repositoryRoot, system(app));
    const apps = {
      functions: { ...functions, folder: folder('functions') },
      web: { ...web, folder: folder('web') },
      // A second web app of the same folder, as web app B is (without B's sign-in, which needs more).
      'web-2': { ...web, folder: folder('web'), localPort: 5002 },
    };
    const appsFile = join(data.dir, 'apps.json');
    writeFileSync(appsFile, JSON.stringify({ apps }));
    stack = await start({
      dataDir: data.dir,
      ports: 'free',
      console: false,
      inMemory: true,
      appsFile,
      // The apps and the one service their start needs (the Functions host keeps its keys in blob
      // storage): the other services' starts were this file's cost, not its subject.
      components: ['blob', 'functions', 'web', 'web-2'],
      watch: true,
    });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    for (const app of ['functions', 'web']) rmSync(buildStamp(system(app), 'build.ts'), { force: true });
  });

  it('rebuilds the function app on an edit and restarts only its host', async () => {
    const before = stack.pids();
    writeFunction('Watched', 'one');
    await answers(functionsUrl('Watched'), 'one');
    const path = system('functions', 'src', 'functions', 'Watched.ts');
    expect(log('functions')).toContain(` File change of type 'Created' detected for '${path}'\n`);
    expect(log('functions')).toContain(RESTART_LINE.functions);
    const after = stack.pids();
    expect(after.functions).not.toBe(before.functions);
    // Every other component runs on, with its state; the host is back on its port.
    for (const name of ['blob', 'web', 'web-2']) expect(after[name], name).toBe(before[name]);
    expect(log('web')).not.toContain('File change');
  });

  it('says a build that fails in one block, keeps the running app, and recovers on the next good edit', async () => {
    const pid = stack.pids().functions;
    writeFileSync(
      system('functions', 'src', 'functions', 'Watched.ts'),
      // The handler's object without its closing parenthesis.
      httpFunction('Watched', 'two').replace("' }) });", "' } });"),
    );
    const lines = await waitFor('the failed build', () => {
      const all = log('functions').split('\n');
      const at = all.findIndex((line) => line.includes('failed: Build failed with 1 error:'));
      return at >= 0 && all.length > at + 2 && all.slice(at, at + 3);
    });
    expect(lines[0]).toMatch(/ building .*system\/functions failed: Build failed with 1 error:$/);
    expect(lines[1]).toMatch(/ src\/functions\/Watched\.ts:2:\d+: ERROR: Expected "\)" but found "}"$/);
    expect(lines[2]).toMatch(/ the running app is kept until a change builds$/);
    expect(stack.pids().functions).toBe(pid);
    expect(await (await fetch(functionsUrl('Watched'))).text()).toBe('one');

    writeFunction('Watched', 'three');
    await answers(functionsUrl('Watched'), 'three');
  });

  it('says an app that builds but fails to start, and starts it on the next good edit', async () => {
    writeFileSync(
      system('functions', 'src', 'functions', 'Watched.ts'),
      `throw new Error('boom at import');\n${httpFunction('Watched', 'x')}`,
    );
    const said = await waitFor(
      'the failed restart',
      () => /^.* restart failed: .*\n.* it stays down until a change builds$/m.exec(log('functions'))?.[0],
      60_000,
    );
    expect(said).toMatch(/ could not load entry point dist\/functions\/Watched\.js: boom at import\n/);
    // Not restarted as a crash is: it would fail the same way until the code changes.
    expect(log('functions')).not.toContain('exited unexpectedly');
    writeFunction('Watched', 'up again');
    await answers(functionsUrl('Watched'), 'up again');
  });

  it('makes one rebuild and one restart of a burst of saves', async () => {
    const restarts = () => count(log('functions'), RESTART_LINE.functions);
    const before = restarts();
    // As an editor's "save all" and a formatter write them: within milliseconds.
    writeFunction('Watched', 'four');
    writeFunction('Burst', 'burst');
    const hostJson = system('functions', 'host.json');
    writeFileSync(hostJson, readFileSync(hostJson));
    writeFunction('Watched', 'five');
    await answers(functionsUrl('Burst'), 'burst');
    await answers(functionsUrl('Watched'), 'five');
    // A later edit restarts it once more: a second restart for the burst would have come before it.
    writeFunction('Watched', 'six');
    await answers(functionsUrl('Watched'), 'six');
    expect(restarts()).toBe(before + 2);
    // What the log says between the last restart before the burst and the burst's.
    const round = log('functions').split(RESTART_LINE.functions)[before] ?? '';
    for (const file of ['Watched.ts', 'Burst.ts', 'host.json']) expect(count(round, file), file).toBe(1);
  });

  it('rebuilds the web app on an edit of a view and restarts both its apps, not the functions host', async () => {
    const before = stack.pids();
    const view = system('web', 'views', 'index.pug');
    writeFileSync(view, readFileSync(view, 'utf8').replace('No tasks yet.', 'Nothing to do yet.'));
    await answers(stack.description.apps.web?.url as string, 'Nothing to do yet.');
    await answers(stack.description.apps['web-2']?.url as string, 'Nothing to do yet.');
    const after = stack.pids();
    expect(after.functions).toBe(before.functions);
    for (const name of ['web', 'web-2']) {
      expect(after[name]).not.toBe(before[name]);
      expect(log(name)).toContain(`File change of type 'Changed' detected for '${view}'`);
      expect(count(log(name), RESTART_LINE.appservice)).toBe(1);
    }
  });

  it('leaves a component stopped on purpose down through an edit; it starts with the new build', async () => {
    await stack.stopComponent('web-2');
    const view = system('web', 'views', 'index.pug');
    writeFileSync(view, readFileSync(view, 'utf8').replace('Nothing to do yet.', 'All done.'));
    await answers(stack.description.apps.web?.url as string, 'All done.');
    expect((await stack.health())['web-2']).toBe('web-2 is not running');
    expect(count(log('web-2'), RESTART_LINE.appservice)).toBe(1);
    await stack.startComponent('web-2');
    await answers(stack.description.apps['web-2']?.url as string, 'All done.');
  });
});

// The tests from here on run side by side: each has a folder or data directory of its own, and most of
// their time is a wait (for a quiet window, a file event, a stack's start). They come after the watched
// stack's, not beside it: the test that builds in this process would meet its watcher's stop of
// esbuild's service (README, "Speed and memory").
describe.concurrent('taskstack start', () => {
  it('watches the apps, as func start does, unless --no-watch', async () => {
    const said = 'stack | watching system/web: an edit rebuilds its app and reloads it';
    // The two starts side by side: each has its own data directory and draws its own free ports.
    const starts = [
      [[], true],
      [['--no-watch'], false],
    ] as const;
    await Promise.all(
      starts.map(async ([flags, watching]) => {
        const cliData = testDataDir();
        try {
          const cliStack = await startCli(cliData.dir, '--free-ports', '--components', 'web', ...flags);
          process.kill(-(cliStack.child.pid as number), 'SIGINT');
          expect(await cliStack.exited).toBe(0);
          expect(cliStack.output().includes(said), cliStack.output()).toBe(watching);
        } finally {
          cliData.remove();
        }
      }),
    );
  });
});

describe.concurrent('watchApps', () => {
  it('says a burst of changes once on the console and in the log of each component of the app, then restarts each once', async () => {
    const dir = join(data.dir, 'watched');
    const file = (...path: string[]) => join(dir, ...path);
    mkdirSync(file('src'), { recursive: true });
    mkdirSync(file('dist'));
    writeFileSync(file('src', 'a.ts'), '1');
    const notes: string[] = [];
    const restarts: string[] = [];
    const component = (name: string): RunningApp => ({
      name,
      note: (text, { console = true } = {}) => notes.push(`${name}${console ? '' : ' (log only)'} | ${text}`),
      restart: async () => restarts.push(name) > 0,
    });
    const app = { dir, inputs: [file('src', 'a.ts')], restartLine: 'restarting' };
    const components = [component('a'), component('b'), component('stopped')];
    const watcher = watchApps([{ ...app, components }], ({ name }) => name !== 'stopped');
    try {
      writeFileSync(file('src', 'a.ts'), '2');
      writeFileSync(file('src', 'a.ts'), '3');
      writeFileSync(file('src', 'b.ts'), '1');
      // What a build writes, an editor's swap file, a file beside the sources that no build reads.
      writeFileSync(file('dist', 'a.js'), '1');
      writeFileSync(file('src', '.a.ts.swp'), '1');
      writeFileSync(file('notes.md'), '1');
      await waitFor('the restarts', () => restarts.length === 2, 10_000);
    } finally {
      await watcher.close();
    }
    const change = (type: string, path: string) => `File change of type '${type}' detected for '${path}'`;
    // The two files in the order their events came (Node's watcher on Linux hears a new file first).
    expect(notes.slice(0, 4).sort()).toEqual([
      `a | ${change('Changed', file('src', 'a.ts'))}`,
      `a | ${change('Created', file('src', 'b.ts'))}`,
      `b (log only) | ${change('Changed', file('src', 'a.ts'))}`,
      `b (log only) | ${change('Created', file('src', 'b.ts'))}`,
    ]);
    expect(notes.slice(4)).toEqual(['a | restarting', 'b | restarting']);
    expect(restarts.sort()).toEqual(['a', 'b']);
  });
});

describe.concurrent('watchApps, as editors save', () => {
  it('hears a file saved by replacing it (write a copy, rename it over: vim, sed -i, safe-write IDEs), and every edit after', async () => {
    const dir = join(data.dir, 'replaced');
    const source = join(dir, 'src', 'functions', 'a.ts');
    mkdirSync(dirname(source), { recursive: true });
    writeFileSync(source, '1');
    const restarts: string[] = [];
    const component: RunningApp = {
      name: 'functions',
      note: () => {},
      restart: async () => restarts.push('functions') > 0,
    };
    // What a later build may read: a file of a folder not there yet (one an edit will import).
    const added = join(dir, 'src', 'more', 'b.ts');
    const inputs = [source, added];
    const watcher = watchApps([{ dir, inputs, restartLine: 'restarting', components: [component] }]);
    try {
      const copy = `${source}.tmp`;
      writeFileSync(copy, '2');
      renameSync(copy, source);
      await waitFor('the restart for the replaced file', () => restarts.length === 1, 10_000);
      // Node's recursive watcher on Linux follows the file's first inode: it heard nothing after this.
      writeFileSync(source, '3');
      await waitFor('the restart for the edit after it', () => restarts.length === 2, 10_000);
      // A folder made meanwhile is heard too.
      mkdirSync(dirname(added));
      writeFileSync(added, '1');
      await waitFor('the restart for a file of a new folder', () => restarts.length === 3, 10_000);
    } finally {
      await watcher.close();
    }
  });
});

describe.concurrent('watchApps, right after the start', () => {
  it('rebuilds for an edit saved after the start built the app and before watching began', async () => {
    const dir = join(data.dir, 'started');
    const file = (...path: string[]) => join(dir, ...path);
    mkdirSync(file('src'), { recursive: true });
    writeFileSync(file('src', 'a.ts'), '1');
    // A build module that says what it read and wrote, as the apps' do.
    writeFileSync(
      file('build.ts'),
      `import { mkdirSync, writeFileSync } from 'node:fs';
export default function build() {
  mkdirSync(${JSON.stringify(file('dist'))}, { recursive: true });
  writeFileSync(${JSON.stringify(file('dist', 'a.js'))}, '');
  return { sources: [${JSON.stringify(file('src', 'a.ts'))}], outputs: [${JSON.stringify(file('dist', 'a.js'))}] };
}
`,
    );
    startedStamps.push(buildStamp(dir, './build.ts'));
    const inputs = await buildAppAndStamp(dir, './build.ts');
    // Saved while the other components started: an edit, and a new file beside the sources.
    writeFileSync(file('src', 'a.ts'), '2');
    writeFileSync(file('src', 'b.ts'), '1');
    const notes: string[] = [];
    let restarts = 0;
    const component: RunningApp = {
      name: 'functions',
      note: (text) => notes.push(text),
      restart: async () => ++restarts > 0,
    };
    const watcher = watchApps([
      { dir, build: './build.ts', inputs, restartLine: 'restarting', components: [component] },
    ]);
    try {
      await waitFor('the restart', () => restarts === 1, 10_000);
    } finally {
      await watcher.close();
    }
    expect(notes.sort()).toEqual([
      `File change of type 'Changed' detected for '${file('src', 'a.ts')}'`,
      `File change of type 'Created' detected for '${file('src', 'b.ts')}'`,
      'restarting',
    ]);
  });
});

describe.concurrent("watchApps, a function app's host.json", () => {
  /** A function app in folder `name` whose build read src/a.ts, with `host` as its host.json. */
  const functionApp = (name: string, host: object, settings?: Record<string, string>) => {
    const dir = join(data.dir, name);
    for (const folder of ['src', 'data', 'docs', 'other']) mkdirSync(join(dir, folder), { recursive: true });
    writeFileSync(join(dir, 'src', 'a.ts'), '1');
    writeFileSync(join(dir, 'host.json'), JSON.stringify({ version: '2.0', ...host }));
    const restarts: string[] = [];
    const notes: string[] = [];
    const component: RunningApp = {
      name,
      note: (text) => notes.push(text),
      restart: async () => restarts.push(name) > 0,
    };
    const app = {
      dir,
      inputs: [join(dir, 'src', 'a.ts')],
      restartLine: 'restarting',
      functionApp: true,
      settings,
    };
    return { dir, restarts, notes, app: { ...app, components: [component] } };
  };

  it('reloads on a change in its watchDirectories and of its watchFiles; not at all with fileWatchingEnabled false', async () => {
    const on = functionApp('host-watches', { watchDirectories: ['data'], watchFiles: ['Notes.txt'] });
    const off = functionApp('host-does-not', { fileWatchingEnabled: false });
    const watcher = watchApps([off.app, on.app]);
    try {
      expect(watcher.folders).toEqual([on.dir]);
      // Heard first, so its round (had it one) would come before the other's.
      writeFileSync(join(off.dir, 'src', 'a.ts'), '2');
      writeFileSync(join(on.dir, 'data', 'tasks.json'), '[]');
      await waitFor('the restart for a file of a watched directory', () => on.restarts.length === 1, 10_000);
      writeFileSync(join(on.dir, 'docs', 'notes.txt'), 'x');
      await waitFor('the restart for a watched file', () => on.restarts.length === 2, 10_000);
      // Not in a watched directory (the runtime compares the top folder), nor a watched file's name.
      writeFileSync(join(on.dir, 'other', 'tasks.json'), '[]');
      writeFileSync(join(on.dir, 'src', 'a.ts'), '2');
      await waitFor('the restart for the source', () => on.restarts.length === 3, 10_000);
    } finally {
      await watcher.close();
    }
    const change = (path: string) => `File change of type 'Created' detected for '${join(on.dir, path)}'`;
    expect(on.notes.filter((note) => note.startsWith('File change'))).toEqual([
      change('data/tasks.json'),
      change('docs/notes.txt'),
      `File change of type 'Changed' detected for '${join(on.dir, 'src', 'a.ts')}'`,
    ]);
    expect([off.restarts, off.notes]).toEqual([[], []]);
  });
  it('takes them from app settings AzureFunctionsJobHost__… too, over host.json, as the runtime does', async () => {
    const on = functionApp('setting-watches', {}, { AzureFunctionsJobHost__watchDirectories__0: 'data' });
    const off = functionApp(
      'setting-does-not',
      { fileWatchingEnabled: true },
      { azurefunctionsjobhost__FileWatchingEnabled: ' False ' },
    );
    const watcher = watchApps([off.app, on.app]);
    try {
      expect(watcher.folders).toEqual([on.dir]);
      writeFileSync(join(on.dir, 'data', 'tasks.json'), '[]');
      await waitFor(
        'the restart for a file of the watched directory',
        () => on.restarts.length === 1,
        10_000,
      );
    } finally {
      await watcher.close();
    }
    expect(on.notes.filter((note) => note.startsWith('File change'))).toEqual([
      `File change of type 'Created' detected for '${join(on.dir, 'data', 'tasks.json')}'`,
    ]);
  });
});
