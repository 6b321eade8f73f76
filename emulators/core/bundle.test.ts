import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type PluginBuild } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { oneCopyPerPackage } from '../../system/one-copy-per-package.mjs';
import { repositoryRoot } from './apps.ts';
import { bundle, bundleEntries, bundleInputs, stopBuilding } from './bundle.mjs';
import { testDataDir, waitFor } from './testing.ts';

const data = testDataDir();
afterAll(() => data.remove());
const bundlesDir = join(repositoryRoot, 'node_modules', '.cache', 'taskstack', 'bundles');

/** A TypeScript module that reports where it thinks it is, and what `import('esbuild')` gives it. */
function probe(name: string): string {
  const dir = join(data.dir, name);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'probe.ts');
  writeFileSync(
    path,
    `const where: string = new URL('.', import.meta.url).href;
export const mention = 'import.meta.url stays a text in a string';
export async function report() {
  const esbuild = await import('esbuild');
  return { where, build: typeof esbuild.build };
}
`,
  );
  return path;
}

describe('bundle', () => {
  it('calls onBuild when it must build, not while the bundle is fresh', async () => {
    const source = probe('announced');
    let builds = 0;
    const onBuild = () => builds++;
    await bundle(source, { onBuild });
    await bundle(source, { onBuild });
    expect(builds).toBe(1);
    // A source changed since the build (its mtime moved past the bundle's): built again, and said so.
    const later = new Date(Date.now() + 2000);
    utimesSync(source, later, later);
    await bundle(source, { onBuild });
    expect(builds).toBe(2);
  });

  it('builds again after a source was replaced by an older file (a copy keeping its date, an archive)', async () => {
    const source = probe('older');
    await bundle(source);
    writeFileSync(source, "export const report = () => 'restored';\n");
    const older = new Date(Date.now() - 3_600_000);
    utimesSync(source, older, older);
    expect((await import(pathToFileURL(await bundle(source)).href)).report()).toBe('restored');
  });

  it('counts the bundler and its plugin among what a bundle was made of (a change to either builds again)', async () => {
    const source = probe('made-by');
    await bundle(source);
    expect(bundleInputs(source)).toEqual(
      expect.arrayContaining([
        'package-lock.json',
        'emulators/core/bundle.mjs',
        'system/one-copy-per-package.mjs',
      ]),
    );
  });

  it('builds again after a source was saved while its bundle was built', async () => {
    const dir = join(data.dir, 'edited-while-building');
    mkdirSync(dir);
    const source = join(dir, 'entry.ts');
    const says = (word: string) => `import tail from './tail.txt';\nexport const said = '${word}' + tail;\n`;
    writeFileSync(source, says('old'));
    // esbuild reads tail.txt once it has read the entry, whose import names it: a pipe holds the build
    // there until this test writes it, after saving the entry anew.
    const tail = join(dir, 'tail.txt');
    execFileSync('mkfifo', [tail]);
    const feed = async (edit?: () => void) => {
      const pipe = await open(tail, 'w');
      edit?.();
      await pipe.write('!');
      await pipe.close();
    };
    let fed = Promise.resolve();
    const first = await bundle(source, {
      onBuild: () => {
        fed = feed(() => writeFileSync(source, says('new')));
      },
    });
    await fed;
    expect((await import(pathToFileURL(first).href)).said).toBe('old!');
    const second = await bundle(source, {
      onBuild: () => {
        fed = feed();
      },
    });
    await fed;
    expect((await import(pathToFileURL(second).href)).said).toBe('new!');
  });

  it('lets a build under way end before it stops the bundler (a watch done while a start builds)', async () => {
    const dir = join(data.dir, 'stopped-while-building');
    mkdirSync(dir);
    const source = join(dir, 'entry.ts');
    writeFileSync(source, "import tail from './tail.txt';\nexport const said = 'built' + tail;\n");
    // As above, a pipe holds the build once esbuild reads it: the bundler is told to stop then.
    const tail = join(dir, 'tail.txt');
    execFileSync('mkfifo', [tail]);
    let stopped: Promise<void> | undefined;
    let fed = Promise.resolve();
    let ended: unknown;
    const built = bundle(source, {
      onBuild: () => {
        fed = (async () => {
          const pipe = await open(tail, 'w');
          stopped = stopBuilding();
          await pipe.write('!');
          await pipe.close();
        })();
      },
    }).finally(() => {
      ended = true;
    });
    await waitFor('the build under way to end', () => ended, 20_000);
    await Promise.all([fed, stopped]);
    expect((await import(pathToFileURL(await built).href)).said).toBe('built!');
  });

  for (const packages of ['external', 'bundle'] as const)
    it(`keeps each module's own import.meta.url and never bundles esbuild (packages: ${packages})`, async () => {
      const source = probe(packages);
      const module = await import(pathToFileURL(await bundle(source, { packages })).href);
      expect(await module.report()).toEqual({
        where: pathToFileURL(join(data.dir, packages, '/')).href,
        build: 'function',
      });
      expect(module.mention).toBe('import.meta.url stays a text in a string');
    });
});

const runCached = fileURLToPath(new URL('./run-cached.cjs', import.meta.url));
/** Runs `bundle` as a component's process does; answers what it printed. */
const run = (bundle: string, ...args: string[]) => {
  const { stdout, stderr, status } = spawnSync(process.execPath, [runCached, bundle, ...args], {
    encoding: 'utf8',
  });
  return { stdout: stdout.trim(), stderr, status };
};

describe('bundleEntries and run-cached.cjs', () => {
  it('make one CommonJS file per virtual entry, which runs as the main script from its code cache', async () => {
    const dir = join(data.dir, 'entries');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'shared.ts'),
      'export const where: string = new URL(".", import.meta.url).href;\n',
    );
    const say = (word: string) => `import { where } from './shared.ts';
import { basename } from 'node:path';
import { importModule, saveCodeCache } from ${JSON.stringify(fileURLToPath(new URL('./bundle.mjs', import.meta.url)))};
// What is not bundled is imported through Node's own loader, from the cache too.
importModule('node:path').then(({ sep }) => {
console.log(${JSON.stringify(word)}, where === ${JSON.stringify(pathToFileURL(`${dir}/`).href)}, basename(process.argv[1] ?? ''), process.argv.slice(2).join(' '), sep);
  saveCodeCache();
});
`;
    const first = await bundleEntries('test-entries', dir, { a: say('alpha'), b: say('beta') });
    expect(Object.keys(first).sort()).toEqual(['a', 'b']);
    // Each module keeps its own import.meta.url; the bundle sees itself as the main script, with its arguments.
    expect(run(first.a as string, 'x', '--y')).toMatchObject({
      stdout: 'alpha true a.cjs x --y /',
      stderr: '',
      status: 0,
    });
    const cache = `${first.a}.v8cache`;
    const written = statSync(cache).mtimeMs;
    expect(readFileSync(cache).length).toBeGreaterThan(0);
    // A cache V8 accepts is used as it is, not written again.
    expect(run(first.a as string).stdout).toBe('alpha true a.cjs  /');
    expect(statSync(cache).mtimeMs).toBe(written);
    // A damaged cache is refused by V8, and replaced.
    writeFileSync(cache, 'not a cache');
    expect(run(first.a as string).stdout).toBe('alpha true a.cjs  /');
    expect(readFileSync(cache, 'utf8')).not.toBe('not a cache');
    // A named cache (a host's, per app) is a file of its own; the bundle still sees only its arguments.
    const { stdout } = spawnSync(process.execPath, [runCached, '--cache=app-1', first.a as string, 'z'], {
      encoding: 'utf8',
    });
    expect(stdout.trim()).toBe('alpha true a.cjs z /');
    expect(readFileSync(`${first.a}.app-1.v8cache`).length).toBeGreaterThan(0);

    // Asked again with the same entries and sources: the same files. A changed entry text: built again.
    expect(await bundleEntries('test-entries', dir, { a: say('alpha'), b: say('beta') })).toEqual(first);
    const second = await bundleEntries('test-entries', dir, { a: say('gamma'), b: say('beta') });
    expect(second.a).not.toBe(first.a);
    expect(run(second.a as string).stdout).toBe('gamma true a.cjs  /');
  });
});

describe('old builds', () => {
  it('go once two newer builds exist and no live process uses them; one in use stays however old', async () => {
    const dir = join(data.dir, 'prune');
    mkdirSync(dir, { recursive: true });
    const make = async (word: string) =>
      dirname(
        (await bundleEntries('test-prune', dir, { a: `console.log(${JSON.stringify(word)});\n` }))
          .a as string,
      );
    const used = await make(`used ${process.pid}`); // used by this process, alive
    const exited = await make(`exited ${process.pid}`);
    // The second build's only user has exited.
    const gone = spawnSync(process.execPath, ['-e', '']).pid as number;
    rmSync(join(exited, '.users'), { recursive: true });
    mkdirSync(join(exited, '.users'));
    writeFileSync(join(exited, '.users', String(gone)), '');
    const third = await make(`third ${process.pid}`);
    expect(existsSync(exited)).toBe(true); // the previous build stays while it is one of the two newest
    const fourth = await make(`fourth ${process.pid}`);
    expect([used, exited, third, fourth].map(existsSync)).toEqual([true, false, true, true]);
    // Using a build again forgets its users that have exited.
    writeFileSync(join(fourth, '.users', String(gone)), '');
    expect(await make(`fourth ${process.pid}`)).toBe(fourth);
    expect(readdirSync(join(fourth, '.users'))).toEqual([String(process.pid)]);
  });

  it("of another live process's build under way stays, though older than the two newest", async () => {
    // Two processes building at once (test workers of a clean clone, two starts after a pull): the
    // one that finishes first must not remove the other's folder while esbuild writes into it.
    const dir = join(data.dir, 'under-way');
    mkdirSync(dir, { recursive: true });
    const entry = (word: string) => ({ a: `console.log(${JSON.stringify(`${word} ${Math.random()}`)});\n` });
    const builder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        // It starts its build, stops itself right after (its folder made, esbuild not yet run), and
        // once continued says whether the bundle it was given exists.
        `import { existsSync } from 'node:fs';
const { bundleEntries } = await import(${JSON.stringify(pathToFileURL(join(import.meta.dirname, 'bundle.mjs')).href)});
const pending = bundleEntries('test-under-way', ${JSON.stringify(dir)}, ${JSON.stringify(entry('other'))});
process.kill(process.pid, 'SIGSTOP');
console.log(existsSync((await pending).a));`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let said = '';
    builder.stdout.on('data', (chunk: Buffer) => {
      said += chunk;
    });
    const exited = new Promise((resolve) => builder.once('exit', resolve));
    try {
      const state = () => readFileSync(`/proc/${builder.pid}/stat`, 'utf8').split(') ')[1]?.[0];
      await waitFor('the other builder stopped mid-build', () => state() === 'T');
      await bundleEntries('test-under-way', dir, entry('first'));
      const builds = join(bundlesDir, 'test-under-way');
      const underWay = readdirSync(builds).filter((name) => name.endsWith(`-${builder.pid}`));
      expect(underWay).toHaveLength(1);
      await bundleEntries('test-under-way', dir, entry('second'));
      await bundleEntries('test-under-way', dir, entry('third'));
      expect(existsSync(join(builds, underWay[0] as string))).toBe(true);
    } finally {
      builder.kill('SIGCONT');
    }
    expect(await exited).toBe(0);
    expect(said).toBe('true\n');
  });

  it('of a module that is gone go once no live process uses them', async () => {
    const bundlesOf = async (name: string) => {
      const source = probe(name);
      const build = dirname(await bundle(source));
      return { source, build, pointer: `${dirname(build)}.json` };
    };
    const [gone, inUse] = [await bundlesOf('gone'), await bundlesOf('gone but used')];
    rmSync(join(gone.build, '.users'), { recursive: true });
    for (const { source } of [gone, inUse]) rmSync(source);
    // Any new build looks for them.
    await bundleEntries('test-prune', data.dir, {
      a: `console.log(${JSON.stringify(String(Math.random()))});\n`,
    });
    expect([gone.build, gone.pointer, inUse.build, inUse.pointer].map(existsSync)).toEqual([
      false,
      false,
      true,
      true,
    ]);
  });
});

describe('bundled packages', () => {
  it('keep one copy of a package npm installed several times at the same version', async () => {
    // type-is and koa each have mime-types 3.0.2 (and its mime-db) in a node_modules of their own.
    const repository = fileURLToPath(new URL('../..', import.meta.url));
    const { main } = await bundleEntries('test-one-copy', repository, {
      main: "import typeIs from 'type-is';\nimport Koa from 'koa';\nconsole.log(typeIs.is('application/json', ['json']), typeof Koa);\n",
    });
    const text = readFileSync(main as string, 'utf8');
    const copies = [...new Set(text.match(/node_modules\/[\w@./-]*?mime-types\/index\.js/g))];
    const versions = copies.map(
      (copy) => JSON.parse(readFileSync(join(repository, dirname(copy), 'package.json'), 'utf8')).version,
    );
    // koa's own accepts wants mime-types 2: that copy stays, beside the one 3.0.2.
    expect(versions.sort()).toEqual([...new Set(versions)].sort());
    expect(versions.filter((version) => version.startsWith('3.'))).toHaveLength(1);
    expect(run(main as string)).toMatchObject({ stdout: 'json function', status: 0 });
  });

  it('cost a second resolution only for the packages installed more than once the same', async () => {
    const repository = fileURLToPath(new URL('../..', import.meta.url));
    const plugin = oneCopyPerPackage(join(repository, 'package-lock.json'));
    const resolvedAgain: string[] = [];
    await build({
      stdin: { contents: "import 'type-is';\nimport 'koa';\n", resolveDir: repository },
      bundle: true,
      platform: 'node',
      write: false,
      logLevel: 'silent',
      plugins: [
        {
          name: 'counting',
          setup: (esbuild) =>
            plugin.setup(
              new Proxy(esbuild, {
                get: (target, key): unknown =>
                  key === 'resolve'
                    ? (...args: Parameters<PluginBuild['resolve']>) => {
                        resolvedAgain.push(args[0]);
                        return target.resolve(...args);
                      }
                    : Reflect.get(target, key),
              }),
            ),
        },
      ],
    });
    // mime-types 3.0.2 is installed under type-is, koa, express …; type-is twice but at two versions
    // (azurite's 1.6.18), koa once.
    expect(resolvedAgain).toContain('mime-types');
    expect(resolvedAgain).not.toContain('type-is');
    expect(resolvedAgain).not.toContain('koa');
  });
});

describe("another user's node_modules", () => {
  it('runs fresh bundles without marking them, and says in one line that a build it needs cannot be written', () => {
    // A project of its own: this folder's bundle.mjs, what it imports, esbuild, and an entry. Outside
    // the test's data directory, which is its user's alone (0700).
    const project = mkdtempSync(join(tmpdir(), 'taskstack-read-only-'));
    const cache = join(project, 'node_modules', '.cache');
    // Root may write anywhere: as root, the other user is nobody; otherwise the cache is made read-only.
    const asRoot = process.getuid?.() === 0;
    /** Every folder of the project readable by all; the cache's `mode` when the other user is this one. */
    const setMode = (mode: number) => {
      for (const dir of [
        project,
        ...readdirSync(project, { recursive: true, encoding: 'utf8' })
          .map((path) => join(project, path))
          // Not through the link to esbuild: chmod would change the installed package.
          .filter((path) => lstatSync(path).isDirectory()),
      ])
        chmodSync(dir, dir.startsWith(cache) && !asRoot ? mode : 0o755);
    };
    try {
      const repository = fileURLToPath(new URL('../..', import.meta.url));
      for (const file of [
        'emulators/core/bundle.mjs',
        'system/one-copy-per-package.mjs',
        'package-lock.json',
      ]) {
        mkdirSync(dirname(join(project, file)), { recursive: true });
        copyFileSync(join(repository, file), join(project, file));
      }
      mkdirSync(join(project, 'node_modules'));
      symlinkSync(join(repository, 'node_modules', 'esbuild'), join(project, 'node_modules', 'esbuild'));
      const entry = join(project, 'entry.ts');
      writeFileSync(entry, 'export const answer: number = 42;\n');
      const script = `const { bundle } = await import(${JSON.stringify(pathToFileURL(join(project, 'emulators/core/bundle.mjs')).href)});
bundle(${JSON.stringify(entry)}).then((main) => console.log(main), (error) => { console.error(error.message); process.exit(1); });`;
      const bundleAs = (other: boolean) =>
        spawnSync(process.execPath, ['--input-type=module', '-e', script], {
          encoding: 'utf8',
          env: { PATH: process.env.PATH },
          ...(other && asRoot ? { uid: 65534, gid: 65534 } : {}),
        });
      const built = bundleAs(false);
      expect(built.stderr).toBe('');
      setMode(0o555);
      // Fresh: it runs, though it cannot mark the build as used.
      expect(bundleAs(true)).toMatchObject({ stdout: built.stdout, stderr: '', status: 0 });
      // A changed source needs a build: one line, naming the folder and what to do.
      utimesSync(entry, new Date(), new Date(Date.now() + 5_000));
      expect(bundleAs(true)).toMatchObject({
        stdout: '',
        stderr:
          'cannot write node_modules/.cache/taskstack/bundles (EACCES): the code taskstack runs is built there, beside the packages it loads; run it as the user who installed them (npm ci), or make that folder writable\n',
        status: 1,
      });
    } finally {
      setMode(0o755);
      rmSync(project, { recursive: true, force: true });
    }
  });
});
