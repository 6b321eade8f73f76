/**
 * The project's module graph, as esbuild resolves it (type-only imports erased): `emulators/core/` is
 * the base every emulator stands on and imports none of them, nor the launcher; and no module imports
 * itself back through others at load time (a circle lets one module see another half-initialised).
 * Lazy `import()`s are edges too for the base, not for circles: they run after every module has loaded.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const SOURCES = ['emulators', 'system', 'gateway-sim', 'contracts', 'scenarios', 'bench'];

/** Every module of the project but tests and type declarations, relative to the root. */
const modules = SOURCES.flatMap((dir) =>
  readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.(ts|mts|mjs|cjs)$/.test(file) && !/\.(test|d)\.m?ts$/.test(file))
    .filter((file) => !file.split('/').some((part) => part === 'node_modules' || part.startsWith('.')))
    .map((file) => join(dir, file)),
);

let inputs: Metafile['inputs'];
beforeAll(async () => {
  const { metafile } = await build({
    absWorkingDir: root,
    entryPoints: modules,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    packages: 'external',
    loader: { '.pug': 'text' },
    write: false,
    outdir: 'unused',
    metafile: true,
    logLevel: 'silent',
  });
  inputs = metafile.inputs;
});

/** The project modules `file` imports, of the given kinds. */
const importsOf = (file: string, kinds: string[]) =>
  (inputs[file]?.imports ?? [])
    .filter((edge) => !edge.external && kinds.includes(edge.kind) && !edge.path.includes('node_modules/'))
    .map((edge) => edge.path);

describe('the module graph', () => {
  it('reads every module of the project', () => {
    expect(modules.length).toBeGreaterThan(200);
    expect(modules.filter((file) => !inputs[file])).toEqual([]);
  });

  it('emulators/core imports no emulator and not the launcher', () => {
    const upward = Object.keys(inputs)
      .filter((file) => file.startsWith('emulators/core/'))
      .flatMap((file) =>
        importsOf(file, ['import-statement', 'require-call', 'dynamic-import'])
          .filter((path) => path.startsWith('emulators/') && !path.startsWith('emulators/core/'))
          .map((path) => `${file} -> ${path}`),
      );
    expect(upward).toEqual([]);
  });

  it('has no import circle', () => {
    const circles: string[] = [];
    const done = new Set<string>();
    const path: string[] = [];
    const visit = (file: string) => {
      const at = path.indexOf(file);
      if (at >= 0) return void circles.push([...path.slice(at), file].join(' -> '));
      if (done.has(file)) return;
      path.push(file);
      for (const next of importsOf(file, ['import-statement', 'require-call'])) visit(next);
      path.pop();
      done.add(file);
    };
    for (const file of Object.keys(inputs)) visit(file);
    expect(circles).toEqual([]);
  });
});
