/**
 * What the apps' builds share (build.ts): the comments of the JavaScript an app ships hold only Latin-1
 * characters, so V8 keeps a module's source at one byte per character; the code means what it meant.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type OutputFile } from 'esbuild';
import { afterAll, expect, it, vi } from 'vitest';
import { bundleOptions, latin1Comments, writeBuildOutput } from './build.ts';

// An app folder of its own: the build needs nothing of a stack.
const data = { dir: mkdtempSync(join(tmpdir(), 'taskstack-build-')) };
afterAll(() => rmSync(data.dir, { recursive: true, force: true }));

it('replaces each character outside Latin-1 in comments by as many `?` as its UTF-16 length, and nothing else', () => {
  const code = "/* a — b ’ é ÿ \u0100 😀 */ const x = /—/u; // — end\nconst y = '—';";
  expect(latin1Comments(code)).toBe("/* a ? b ? é ÿ ? ?? */ const x = /—/u; // ? end\nconst y = '—';");
  expect(latin1Comments(code)).toHaveLength(code.length);
});

it('ships modules whose comments had other characters as Latin-1 only, their strings and names unchanged', async () => {
  writeFileSync(join(data.dir, 'package.json'), '{ "name": "app", "type": "module" }');
  writeFileSync(
    join(data.dir, 'main.ts'),
    [
      'export const shapes = {',
      '  /** A dash — and a quote ’, kept as esbuild keeps such comments. */',
      "  dash: '—’é',",
      '};',
      'export const pattern = /—+/u;',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the module's source, a template literal in it
      'export const ünïcödé = `😀 ${shapes.dash}`;',
      '',
    ].join('\n'),
  );
  const result = await build({
    ...bundleOptions(data.dir),
    entryPoints: ['main.ts'],
    outdir: 'dist',
    banner: {},
  });
  const { outputs } = await writeBuildOutput(result, join(data.dir, 'dist'));
  const main = outputs.find((path) => path.endsWith('main.js')) as string;
  const shipped = readFileSync(main, 'utf8');
  expect(shipped).toContain('/** A dash ? and a quote ?, kept as esbuild keeps such comments. */');
  // Only the regular expression keeps its character: esbuild escapes the others.
  expect(shipped.match(/[^\0-\xff]/gu)).toEqual(['—']);
  const app = await import(pathToFileURL(main).href);
  expect(app.shapes.dash).toBe('—’é');
  expect(app.pattern.test('——')).toBe(true);
  expect(app.ünïcödé).toBe('😀 —’é');
});

it('ships an output the last build shipped without reading it again, unless what is on disk changed since', async () => {
  const dist = join(data.dir, 'again', 'dist');
  const path = join(dist, 'chunk.js');
  let reads = 0;
  // As esbuild gives an output: its hash, and its text decoded when asked for.
  const output = (hash: string, text: string): OutputFile => ({
    path,
    hash,
    contents: Buffer.from(text),
    get text() {
      reads++;
      return text;
    },
  });
  const write = (file: OutputFile) =>
    writeBuildOutput({ outputFiles: [file], metafile: { inputs: {}, outputs: {} } }, dist);
  await write(output('one', '/* — */ export const x = 1;\n'));
  expect(readFileSync(path, 'utf8')).toBe('/* ? */ export const x = 1;\n');
  const read = reads;
  expect(read).toBeGreaterThan(0);
  await write(output('one', '/* — */ export const x = 1;\n'));
  expect(reads).toBe(read);
  // Written over since (by another process's build): shipped again.
  writeFileSync(path, 'other');
  await write(output('one', '/* — */ export const x = 1;\n'));
  expect(readFileSync(path, 'utf8')).toBe('/* ? */ export const x = 1;\n');
  await write(output('two', '/* – */ export const x = 2;\n'));
  expect(readFileSync(path, 'utf8')).toBe('/* ? */ export const x = 2;\n');
});

it('ships an output another process’s build shipped without reading it again, unless what is on disk changed since', async () => {
  // An app whose packages are installed beside it, where the records are kept.
  const app = join(data.dir, 'kept');
  mkdirSync(join(app, 'node_modules'), { recursive: true });
  const dist = join(app, 'dist');
  const path = join(dist, 'chunk.js');
  let reads = 0;
  const output = (text: string): OutputFile => ({
    path,
    hash: 'one',
    contents: Buffer.from(text),
    get text() {
      reads++;
      return text;
    },
  });
  // Each build in a process of its own: this module loaded afresh, with nothing in memory.
  const buildInNewProcess = async (file: OutputFile) => {
    vi.resetModules();
    const { writeBuildOutput: write } = await import('./build.ts');
    return write({ outputFiles: [file], metafile: { inputs: {}, outputs: {} } }, dist);
  };
  await buildInNewProcess(output('/* — */ export const x = 1;\n'));
  const read = reads;
  expect(read).toBeGreaterThan(0);
  await buildInNewProcess(output('/* — */ export const x = 1;\n'));
  expect(reads).toBe(read);
  expect(readFileSync(path, 'utf8')).toBe('/* ? */ export const x = 1;\n');
  writeFileSync(path, 'other');
  await buildInNewProcess(output('/* — */ export const x = 1;\n'));
  expect(readFileSync(path, 'utf8')).toBe('/* ? */ export const x = 1;\n');
});
