/**
 * A function app's `languageWorkers__node__arguments` reach its host's process, as Azure's host gives
 * them to the Node worker: a debugger can attach to the app's code (`--inspect`), and no other
 * component's process gets them.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { type Stack, start } from '../stack/launcher.ts';
import { workerArguments } from './config.ts';
import { appPath } from './test/helpers.ts';

const data = testDataDir();
afterAll(() => data.remove());
const ARGUMENT = 'languageWorkers__node__arguments';
const cjs = appPath('app-cjs');

describe('workerArguments', () => {
  it('reads the setting with the app settings’ precedence and splits it at white space', () => {
    expect(workerArguments(cjs, { [ARGUMENT]: ' --inspect=9229   --trace-warnings ' }, {})).toEqual([
      '--inspect=9229',
      '--trace-warnings',
    ]);
    expect(workerArguments(cjs, {}, { [ARGUMENT]: '--inspect' })).toEqual(['--inspect']);
    expect(workerArguments(cjs, {}, {})).toEqual([]);
    // From local.settings.json Values, unless the environment sets it.
    writeFileSync(
      join(data.dir, 'local.settings.json'),
      JSON.stringify({ Values: { [ARGUMENT]: '--inspect=9230' } }),
    );
    expect(workerArguments(data.dir, {}, {})).toEqual(['--inspect=9230']);
    expect(workerArguments(data.dir, {}, { [ARGUMENT]: '--inspect=9231' })).toEqual(['--inspect=9231']);
    // An unreadable local.settings.json gives none: the host's start says what is wrong with it.
    writeFileSync(join(data.dir, 'local.settings.json'), '{ "Values": ');
    expect(workerArguments(data.dir, {}, {})).toEqual([]);
  });
});

describe('a function app started with --inspect', () => {
  let stack: Stack;
  afterAll(() => stack?.stop());

  it('runs its host with the argument: a debugger can attach to it, and to nothing else of the stack', async () => {
    const appsFile = join(data.dir, 'apps.json');
    const app = { kind: 'functionapp', folder: 'emulators/functions-host/test/app-cjs', localPort: 7090 };
    writeFileSync(appsFile, JSON.stringify({ apps: { fn: { ...app, settings: {} } } }));
    stack = await start({
      dataDir: data.dir,
      ports: 'free',
      console: false,
      appsFile,
      components: ['fn', 'eventgrid'],
      settings: { fn: { [ARGUMENT]: '--inspect=127.0.0.1:0' } },
    });
    const argv = (name: string) => readFileSync(`/proc/${stack.pids()[name]}/cmdline`, 'utf8').split('\0');
    expect(argv('fn')).toContain('--inspect=127.0.0.1:0');
    expect(argv('eventgrid').filter((arg) => arg.startsWith('--inspect'))).toEqual([]);
    const log = readFileSync(stack.description.logs['fn-host'] as string, 'utf8');
    const port = /Debugger listening on ws:\/\/127\.0\.0\.1:(\d+)\//.exec(log)?.[1];
    expect(port, log).toBeDefined();
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { type: string }[];
    expect(targets.map((target) => target.type)).toEqual(['node']);
    // The app serves as ever while the inspector listens.
    expect(await (await fetch(`${stack.description.apps.fn?.url}/api/hello/you`)).text()).toBe('Hello, you');
  });
});
