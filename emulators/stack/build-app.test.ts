import { mkdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repositoryRoot } from '../core/apps.ts';
import { testDataDir } from '../core/testing.ts';
import { buildAppIfChanged, buildStamp } from './build-app.ts';

const data = testDataDir();
/** The stamps of this file's apps, which live in temporary folders: gone with them. */
const stamps: string[] = [];
afterAll(() => {
  data.remove();
  for (const stamp of stamps) rmSync(stamp, { force: true });
});

/** An app whose build module counts its runs and answers what it read and wrote. */
function app(name: string) {
  const dir = join(data.dir, name);
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'src', 'main.ts'), 'export const x = 1;\n');
  writeFileSync(
    join(dir, 'build.ts'),
    `import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
const dir = ${JSON.stringify(dir)};
export default async function build() {
  appendFileSync(join(dir, 'runs'), 'x');
  mkdirSync(join(dir, 'dist'), { recursive: true });
  writeFileSync(join(dir, 'dist', 'main.js'), 'export const x = 1;');
  return { sources: [join(dir, 'src', 'main.ts')], outputs: [join(dir, 'dist', 'main.js')] };
}
`,
  );
  // Written a minute ago: a file written in the millisecond the build starts counts as changed (the
  // stamp's time is whole milliseconds, a file's is finer; rebuilding is the safe side), which made the
  // second build of this test run again now and then.
  const past = new Date(Date.now() - 60_000);
  for (const file of [join(dir, 'src', 'main.ts'), join(dir, 'build.ts')]) utimesSync(file, past, past);
  const runs = () => readFileSync(join(dir, 'runs'), 'utf8').length;
  stamps.push(buildStamp(dir, './build.ts'));
  return { dir, runs, build: () => buildAppIfChanged(dir, './build.ts') };
}

describe('the launcher builds an app', () => {
  it('once, then again only when a source it read changed or an output is gone', async () => {
    const one = app('one');
    await one.build();
    await one.build();
    expect(one.runs()).toBe(1);
    // Readable by all, as the build it describes: another user's start can use that build.
    expect(statSync(buildStamp(one.dir, './build.ts')).mode & 0o777).toBe(0o644);
    const source = join(one.dir, 'src', 'main.ts');
    const later = new Date(Date.now() + 5_000);
    utimesSync(source, later, later);
    await one.build();
    expect(one.runs()).toBe(2);
    // Older than that build again (an mtime ahead of the clock would count as changed at every start).
    const earlier = new Date(Date.now() - 60_000);
    utimesSync(source, earlier, earlier);
    rmSync(join(one.dir, 'dist'), { recursive: true });
    await one.build();
    expect(one.runs()).toBe(3);
    await one.build();
    expect(one.runs()).toBe(3);
  });

  it('again when its build module changed', async () => {
    const two = app('two');
    await two.build();
    const later = new Date(Date.now() + 5_000);
    utimesSync(join(two.dir, 'build.ts'), later, later);
    await two.build();
    expect(two.runs()).toBe(2);
  });

  it('again when a source was replaced by an older file (a copy keeping its date, an archive)', async () => {
    const three = app('three');
    await three.build();
    const source = join(three.dir, 'src', 'main.ts');
    writeFileSync(source, 'export const x = 2;\n');
    const older = new Date(Date.now() - 3_600_000);
    utimesSync(source, older, older);
    await three.build();
    expect(three.runs()).toBe(2);
  });

  it('again when a file was made beside its sources (a new function, which a build finds by a glob)', async () => {
    const five = app('five');
    await five.build();
    writeFileSync(join(five.dir, 'src', 'added.ts'), 'export const y = 1;\n');
    await five.build();
    expect(five.runs()).toBe(2);
    await five.build();
    expect(five.runs()).toBe(2);
  });

  it('again when a source was saved while it built', async () => {
    const four = app('four');
    const source = join(four.dir, 'src', 'main.ts');
    // As an editor's save lands after the build read the file and before the stamp is written.
    writeFileSync(
      join(four.dir, 'build.ts'),
      readFileSync(join(four.dir, 'build.ts'), 'utf8').replace(
        "appendFileSync(join(dir, 'runs'), 'x');",
        `appendFileSync(join(dir, 'runs'), 'x');\n  writeFileSync(${JSON.stringify(source)}, 'export const x = 3;\\n');`,
      ),
    );
    await four.build();
    await four.build();
    expect(four.runs()).toBe(2);
  });

  it('and says which app a failed build is, keeping what the build said', async () => {
    const dir = join(data.dir, 'broken');
    mkdirSync(join(dir, 'src'), { recursive: true });
    writeFileSync(join(dir, 'src', 'main.ts'), 'export const x = f(;\n');
    writeFileSync(
      join(dir, 'build.ts'),
      `import { build } from 'esbuild';
export default () => build({ absWorkingDir: ${JSON.stringify(dir)}, entryPoints: ['src/main.ts'], write: false, logLevel: 'silent' });
`,
    );
    stamps.push(buildStamp(dir, './build.ts'));
    await expect(buildAppIfChanged(dir, './build.ts')).rejects.toThrow(
      `building ${relative(repositoryRoot, dir)} failed: Build failed with 1 error:\nsrc/main.ts:1:19: ERROR: Unexpected ";"`,
    );
  });
});
