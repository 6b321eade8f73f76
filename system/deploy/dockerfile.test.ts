import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { loadApps, repositoryRoot } from '../../emulators/core/apps.ts';
import { loadTopology } from '../../emulators/core/topology.ts';
import { serviceNames } from '../../emulators/registry.ts';
import { composeFile } from './compose.ts';

const dockerfile = readFileSync(join(repositoryRoot, 'Dockerfile'), 'utf8');
const manifest = JSON.parse(readFileSync(join(repositoryRoot, 'package.json'), 'utf8'));

/** What the image's entry loads for each component compose runs on it: source files and packages. */
async function imageImports() {
  const services = composeFile(loadTopology(), loadApps()).services as Record<
    string,
    { image: string; command?: string[] }
  >;
  const components = Object.values(services)
    .filter((service) => service.image === 'taskstack-emulators:local')
    .map((service) => service.command?.[0] as string)
    .filter((name) => name !== 'init');
  expect(components.every((name) => (serviceNames as string[]).includes(name))).toBe(true);
  // Each component's module as the registry imports it (the gateway lives in gateway-sim/, not emulators/).
  const registry = readFileSync(join(repositoryRoot, 'emulators/registry.ts'), 'utf8');
  const entries = components.map((name) => {
    const path = new RegExp(`^\\s*${name}: '([^']+)'`, 'm').exec(registry)?.[1];
    expect(path, `${name} in emulators/registry.ts`).toBeDefined();
    return join('emulators', path as string);
  });
  expect(entries).toContain(join('gateway-sim', 'index.ts'));
  const { metafile } = await build({
    absWorkingDir: repositoryRoot,
    entryPoints: ['emulators/stack/container.ts', ...entries],
    bundle: true,
    write: false,
    outdir: 'out',
    format: 'esm',
    platform: 'node',
    packages: 'external',
    metafile: true,
    logLevel: 'silent',
  });
  const files = Object.keys(metafile.inputs);
  const packages = new Set(
    Object.values(metafile.inputs)
      .flatMap((input) => input.imports)
      .filter(
        (imported) =>
          imported.external && !imported.path.startsWith('node:') && !builtinModules.includes(imported.path),
      )
      .map((imported) =>
        imported.path
          .split('/')
          .slice(0, imported.path.startsWith('@') ? 2 : 1)
          .join('/'),
      ),
  );
  return { files, packages: [...packages] };
}

describe('the Dockerfile', () => {
  it('copies every source file the container entry and its components load', async () => {
    const copied = [...dockerfile.matchAll(/^COPY (.+) \.\/\S*$/gm)].flatMap((match) =>
      (match[1] as string).split(' '),
    );
    const { files } = await imageImports();
    const missing = files.filter(
      (file) => !copied.some((source) => file === source || file.startsWith(`${source}/`)),
    );
    expect(missing).toEqual([]);
  });

  it('installs (npm ci --omit=dev) every package they import', async () => {
    expect(dockerfile).toContain('npm ci --omit=dev');
    const { packages } = await imageImports();
    expect(packages.filter((name) => !manifest.dependencies[name])).toEqual([]);
  });
});
