/**
 * The views compiled at build time (build.ts's pugViews): the same HTML pug renders from the view at run
 * time, and a view pug refuses fails the build, naming the view and the line.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import pug from 'pug';
import { afterAll, describe, expect, it } from 'vitest';
import { testDataDir } from '../../emulators/core/testing.ts';
import { buildAppIfChanged } from '../../emulators/stack/build-app.ts';
import { pugViews } from './build.ts';

const data = testDataDir();
afterAll(() => data.remove());

/** `view`'s render function as the build compiles it; `dependencies` gets the views it extends. */
async function compiledView(view: string, dependencies = new Set<string>()) {
  const entry = join(data.dir, 'entry.js');
  writeFileSync(entry, `export { default } from ${JSON.stringify(view)};`);
  const { outputFiles } = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'iife',
    globalName: 'view',
    write: false,
    logLevel: 'silent',
    plugins: [pugViews(dependencies)],
  });
  const code = outputFiles[0]?.text ?? '';
  return (new Function(`${code}; return view.default;`) as () => (locals: object) => string)();
}

describe('the index view compiled at build time', () => {
  const index = fileURLToPath(new URL('views/index.pug', import.meta.url));
  const task = (title: string) => ({ id: title, title, description: '<b>"&\'', dueDate: null });
  const cases = {
    'no tasks, a refused form': {
      tasks: [],
      formToken: 't"<',
      message: 'Title is required.',
      values: { title: '', description: '<script>alert(1)</script>', dueDate: 'x\' onx="1' },
      invalid: 'title',
    },
    'tasks and a signed-in user': {
      tasks: [task('a'), task('<i>b</i>')],
      profile: { displayName: 'Ann <A>', mail: 'ann@example.com' },
      formToken: 'token',
      values: {},
    },
  };

  it.each(Object.entries(cases))('renders what pug renders from the view: %s', async (_, locals) => {
    const dependencies = new Set<string>();
    const render = await compiledView(index, dependencies);
    expect(render(locals)).toBe(pug.renderFile(index, locals));
    expect([...dependencies]).toEqual([fileURLToPath(new URL('views/layout.pug', import.meta.url))]);
  });
});

it('fails the build on a view pug refuses, naming the view and the line', async () => {
  mkdirSync(join(data.dir, 'views'));
  const broken = join(data.dir, 'views', 'broken.pug');
  writeFileSync(broken, 'div\n  p(class=)\n');
  await expect(compiledView(broken)).rejects.toThrow(/broken\.pug:2/);
});

/** `file` of dist/ and every file it imports statically (`import … from`, `import "…"`), transitively. */
function staticImports(file: string, found = new Set<string>()): Set<string> {
  if (found.has(file)) return found;
  found.add(file);
  for (const [, path] of readFileSync(file, 'utf8').matchAll(
    /^(?:import|export)\b[^;()]*?["'](\.[^"']+)["']/gm,
  ))
    staticImports(join(dirname(file), path ?? ''), found);
  return found;
}

// What each variant's start loads, and what it leaves to its first use. A: the identity SDK (MSAL,
// jsonwebtoken …) only for an identity-based hub connection, never for a connection string. B: Cosmos DB's
// and the identity SDK at the store's first use (the start and its health check never use the store).
it.each([
  {
    variant: 'A',
    chunks: ['events'],
    loads: '@azure/event-hubs',
    not: ['@azure/identity', '@azure/msal-node'],
  },
  {
    variant: 'B',
    chunks: ['cosmos-store', 'signin'],
    loads: '@azure/msal-node',
    not: ['@azure/cosmos', '@azure/identity'],
  },
])('variant $variant starts without $not', async ({ chunks, loads, not }) => {
  await buildAppIfChanged(fileURLToPath(new URL('.', import.meta.url)), 'build.ts');
  const dist = fileURLToPath(new URL('dist/', import.meta.url));
  const server = join(dist, 'server.js');
  const loaded = [...staticImports(server)];
  for (const chunk of chunks) {
    const path = new RegExp(`import\\("(\\./chunks/${chunk}-[^"]+)"\\)`).exec(
      readFileSync(server, 'utf8'),
    )?.[1];
    expect(path).toBeDefined();
    loaded.push(...staticImports(join(dist, path ?? '')));
  }
  const sources = loaded.map((file) => readFileSync(file, 'utf8')).join('\n');
  expect(sources).toContain(`node_modules/${loads}/`);
  for (const name of not) expect(sources).not.toContain(`node_modules/${name}/`);
});
