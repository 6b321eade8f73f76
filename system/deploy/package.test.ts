import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { unzipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadApps, repositoryRoot } from '../../emulators/core/apps.ts';
import { testDataDir, waitFor } from '../../emulators/core/testing.ts';
import { packageApim, packageApps } from './package.ts';

const apps = loadApps();
const data = testDataDir();
const zips: Record<string, Record<string, Uint8Array>> = {};

beforeAll(async () => {
  for (const [name, zip] of Object.entries(await packageApps(apps, data.dir)))
    zips[name] = unzipSync(readFileSync(zip));
}, 240_000);
afterAll(() => data.remove());

/** The dependencies a package.json inside the zip names, each resolved as Node would within the zip. */
function unresolved(files: Record<string, Uint8Array>): string[] {
  const missing: string[] = [];
  for (const path of Object.keys(files).filter((file) => /^(.*\/)?package\.json$/.test(file))) {
    const dir = path.slice(0, -'package.json'.length);
    if (dir !== '' && !/node_modules\/(@[^/]+\/)?[^/]+\/$/.test(dir)) continue; // package.json of a subfolder
    const manifest = JSON.parse(Buffer.from(files[path] as Uint8Array).toString('utf8'));
    for (const name of Object.keys(manifest.dependencies ?? {})) {
      const candidates: string[] = [];
      for (let at = dir; ; at = at.replace(/[^/]+\/$/, '').replace(/node_modules\/(@[^/]+\/)?$/, '')) {
        candidates.push(`${at}node_modules/${name}/package.json`);
        if (at === '') break;
      }
      if (!candidates.some((candidate) => files[candidate])) missing.push(`${name} (from ${path})`);
    }
  }
  return missing;
}

describe('npm run package', () => {
  it('zips the function app in config-zip layout: host.json, package.json and the built code at the root', () => {
    const files = zips.functions as Record<string, Uint8Array>;
    expect(files['host.json']).toBeDefined();
    expect(JSON.parse(Buffer.from(files['package.json'] as Uint8Array).toString()).main).toBe(
      'dist/functions/*.js',
    );
    // One built module per function source: what package.json `main` loads in Azure.
    const sources = readdirSync(join(repositoryRoot, 'system/functions/src/functions')).map((file) =>
      file.replace(/\.ts$/, '.js'),
    );
    const built = Object.keys(files).filter((file) => /^dist\/functions\/[^/]+\.js$/.test(file));
    expect(built.sort()).toEqual(sources.map((file) => `dist/functions/${file}`).sort());
  });

  for (const name of Object.keys(apps))
    it(`leaves the tests, sources, build and local settings out of ${name}`, () => {
      const paths = Object.keys(zips[name] as object).filter((path) => !path.startsWith('node_modules/'));
      expect(
        paths.filter((path) =>
          /\.test\.ts$|^src\/|^build\.ts$|^bench\.ts$|^test-support\.ts$|^local\.settings\.json$/.test(path),
        ),
      ).toEqual([]);
    });

  for (const name of Object.keys(apps))
    it(`gives ${name} its production dependencies, every one resolvable, and no dev tool`, () => {
      const files = zips[name] as Record<string, Uint8Array>;
      const manifest = JSON.parse(Buffer.from(files['package.json'] as Uint8Array).toString());
      for (const dependency of Object.keys(manifest.dependencies))
        expect(files[`node_modules/${dependency}/package.json`], dependency).toBeDefined();
      expect(unresolved(files)).toEqual([]);
      for (const tool of ['vitest', 'typescript', '@biomejs/biome', 'azurite', 'testcontainers'])
        expect(files[`node_modules/${tool}/package.json`], tool).toBeUndefined();
      // What the app only builds with (the SDKs its build bundles, the build tools) is not shipped.
      for (const bundled of Object.keys(manifest.devDependencies ?? {}))
        expect(files[`node_modules/${bundled}/package.json`], bundled).toBeUndefined();
    });

  it('runs the function app from the staged files alone: every function registers with the worker', async () => {
    // As the Node worker loads an app: `@azure/functions-core` through a require hook, then each entry
    // point by import(). The stage lies outside the repository: nothing resolves from the repository's
    // node_modules, only from the stage's own.
    const worker = `
      import Module from 'node:module';
      import { readdirSync } from 'node:fs';
      const names = [];
      const core = {
        setProgrammingModel() {},
        registerFunction: (metadata) => (names.push(metadata.name), { dispose() {} }),
        registerHook: () => ({ dispose() {} }),
        log() {},
      };
      const require = Module.prototype.require;
      Module.prototype.require = function (id) {
        return id === '@azure/functions-core' ? core : require.apply(this, arguments);
      };
      for (const file of readdirSync('dist/functions').filter((file) => file.endsWith('.js')))
        await import('./dist/functions/' + file);
      console.log(JSON.stringify(names));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', worker], {
      cwd: join(data.dir, 'functions'),
    });
    const sources = readdirSync(join(repositoryRoot, 'system/functions/src/functions'));
    expect(JSON.parse(stdout).sort()).toEqual(sources.map((file) => file.replace(/\.ts$/, '')).sort());
  });

  it('runs the web app from the staged files alone: it starts and renders a page', async () => {
    const server = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const env = {
      PATH: process.env.PATH,
      PORT: String(port),
      HOST: '127.0.0.1',
      WebAppVariant: 'A',
      StreamHubConnection:
        'Endpoint=sb://127.0.0.1;SharedAccessKeyName=k;SharedAccessKey=k;UseDevelopmentEmulator=true',
    };
    const app = spawn(process.execPath, ['dist/server.js'], { cwd: join(data.dir, 'web'), env });
    let output = '';
    for (const stream of [app.stdout, app.stderr])
      stream.on('data', (chunk) => {
        output += chunk;
      });
    try {
      await waitFor(
        'the staged web app to listen',
        () => output.includes('listening') || app.exitCode !== null,
      );
      expect(output).toContain(`listening on port ${port}`);
      const page = await fetch(`http://127.0.0.1:${port}/`); // rendered by pug, loaded from the stage
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<html');
    } finally {
      app.kill();
    }
  });

  it('builds a folder two apps share once, and gives each app its own zip of the same files', async () => {
    // A folder whose build leaves a line in a log each time it runs.
    const folder = join(data.dir, 'shared-app');
    mkdirSync(folder);
    const log = join(data.dir, 'builds.log');
    writeFileSync(join(folder, 'package.json'), JSON.stringify({ name: 'shared-app', main: 'main.js' }));
    writeFileSync(join(folder, 'main.js'), '');
    writeFileSync(
      join(folder, 'build.mjs'),
      `import { appendFileSync } from 'node:fs';\nexport default () => appendFileSync(${JSON.stringify(log)}, 'built\\n');\n`,
    );
    const app = {
      kind: 'webapp' as const,
      folder: relative(repositoryRoot, folder),
      build: 'build.mjs',
      localPort: 1,
      healthCheckPath: '/',
      settings: {},
    };
    const out = join(data.dir, 'shared-out');
    const shared = await packageApps({ one: app, two: app }, out);
    expect(readFileSync(log, 'utf8')).toBe('built\n');
    expect(Object.keys(shared)).toEqual(['one', 'two']);
    expect(readFileSync(shared.one as string).equals(readFileSync(shared.two as string))).toBe(true);
    expect(Object.keys(unzipSync(readFileSync(shared.two as string))).sort()).toEqual([
      'main.js',
      'package.json',
    ]);
    // …and so for the apps of apps.json that share a folder (web apps A and B: one build, settings differ).
    const first = new Map<string, string>();
    for (const [name, declaration] of Object.entries(apps)) {
      if (!first.has(declaration.folder)) first.set(declaration.folder, name);
      const [files, same] = [zips[name], zips[first.get(declaration.folder) as string]] as Record<
        string,
        Uint8Array
      >[];
      expect(Object.keys(files as object), name).toEqual(Object.keys(same as object));
      const differ = Object.keys(files as object).filter(
        (path) => !Buffer.from(files?.[path] as Uint8Array).equals(same?.[path] as Uint8Array),
      );
      expect(differ, name).toEqual([]);
    }
    expect(first.size).toBeLessThan(Object.keys(apps).length);
  });

  it('writes the APIM import set: system/gateway/ as it is, each API linked to its OpenAPI document', () => {
    const dir = packageApim(data.dir) as string;
    for (const file of ['policies/global.xml', 'named-values.json', 'products.json'])
      expect(readFileSync(join(dir, 'system/gateway', file), 'utf8')).toBe(
        readFileSync(join(repositoryRoot, 'system/gateway', file), 'utf8'),
      );
    for (const api of readdirSync(join(dir, 'system/gateway/apis'))) {
      const { value } = JSON.parse(readFileSync(join(dir, 'system/gateway/apis', api), 'utf8')).properties;
      const linked = join(dir, 'system/gateway/apis', value);
      expect(linked.startsWith(dir), api).toBe(true);
      expect(readFileSync(linked, 'utf8')).toBe(
        readFileSync(join(repositoryRoot, 'system/gateway/apis', value), 'utf8'),
      );
    }
  });

  it('stages the same files unzipped, for docker-compose to mount', () => {
    for (const [name, files] of Object.entries(zips))
      for (const path of ['package.json', ...Object.keys(files).filter((file) => file.startsWith('dist/'))])
        expect(
          readFileSync(join(data.dir, name, path)).equals(Buffer.from(files[path] as Uint8Array)),
          path,
        ).toBe(true);
  });
});
