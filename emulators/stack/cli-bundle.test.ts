/**
 * What each `taskstack` command loads before it answers: the CLI's bundle keeps the modules only some
 * commands use in chunks loaded at their first use (README, issue 13).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { bundle } from '../core/bundle.mjs';
import { repositoryRoot } from '../core/files.ts';

const main = await bundle(fileURLToPath(new URL('cli.ts', import.meta.url)), { packages: 'bundle' });

/** The sources (relative to the project) of bundle file `file` and of what it imports statically. */
function sourcesOf(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return [];
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  // `import{a,b}from"./chunk.mjs"` or `import"./chunk.mjs"`; not `import("./chunk.mjs")`, loaded when used.
  const imports = [...text.matchAll(/\bimport\s*(?:[\w\s{},*$]*\bfrom\s*)?"(\.\/[^"]+)"/g)];
  const { sources } = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] };
  const own = sources.map((source) => relative(repositoryRoot, resolve(dirname(file), source)));
  return [...own, ...imports.flatMap(([, path]) => sourcesOf(join(dirname(file), path ?? ''), seen))];
}

/** What a command loads: the main chunk, and the chunks of `modules` (named as the bundle names them). */
function loads(...modules: string[]): string[] {
  const text = readFileSync(main, 'utf8');
  return [main, ...modules].flatMap((module) => {
    if (module === main) return sourcesOf(main);
    const chunk = new RegExp(`import\\("(\\./${module}-[^"]+)"\\)`).exec(text)?.[1];
    expect(chunk, module).toBeDefined();
    return sourcesOf(join(dirname(main), chunk ?? ''));
  });
}

const zod = 'node_modules/zod/';
const launcher = 'emulators/stack/launcher.ts';

it('answers `help` having loaded no package and no launcher', () => {
  const sources = loads();
  expect(sources.filter((source) => source.startsWith('node_modules/'))).toEqual([]);
  expect(sources.filter((source) => source === launcher)).toEqual([]);
});

it('runs status, stop, reset and clock, and refuses bad arguments, without zod or the launcher', () => {
  const sources = loads('stackfile', 'control');
  expect(sources.filter((source) => source.startsWith(zod) || source === launcher)).toEqual([]);
});

it('loads zod and the launcher for `start`', () => {
  const sources = loads('zod', 'apps', 'launcher');
  expect(sources.some((source) => source.startsWith(zod))).toBe(true);
  expect(sources.some((source) => source === launcher)).toBe(true);
});
