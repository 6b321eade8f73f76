import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { bundle } from './bundle.mjs';
import { testDataDir } from './testing.ts';

const data = testDataDir();
afterAll(() => data.remove());

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
