/**
 * A host's process starts as its app's settings say, as in Azure: the app's NODE_OPTIONS are in its
 * environment, and a function app's `languageWorkers__node__arguments` are the Node arguments of its
 * worker (here the host's own process). So `--inspect` attaches a debugger to an app's code, and to no
 * other process of the stack.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import { appEnvironment } from '../functions-host/config.ts';
import { appPath } from '../functions-host/test/helpers.ts';
import { type Stack, start } from './launcher.ts';

const data = testDataDir();
afterAll(() => data.remove());
const WORKER = 'languageWorkers__node__arguments';

/** App setting `name` as the host's process gets it in its environment. */
const appSetting = (appDir: string, settings: Record<string, string>, name: string, env: NodeJS.ProcessEnv) =>
  appEnvironment(appDir, settings, env)[name];

describe("a function app's settings before its host starts (appEnvironment)", () => {
  it('follow the app settings’ precedence: settings, then the environment, then local.settings.json', () => {
    expect(appSetting(appPath('app-cjs'), { [WORKER]: '--a' }, WORKER, { [WORKER]: '--b' })).toBe('--a');
    expect(appSetting(appPath('app-cjs'), {}, WORKER, { [WORKER]: '--b' })).toBe('--b');
    expect(appSetting(appPath('app-cjs'), {}, WORKER, {})).toBeUndefined();
    /** An app folder under the test's directory holding only `text` as its local.settings.json. */
    const withLocal = (name: string, text: string) => {
      const dir = join(data.dir, name);
      mkdirSync(dir);
      writeFileSync(join(dir, 'local.settings.json'), text);
      return dir;
    };
    const local = withLocal('local', JSON.stringify({ IsEncrypted: false, Values: { [WORKER]: '--c' } }));
    const broken = withLocal('broken', '{ "Values": ');
    expect(appSetting(local, {}, WORKER, {})).toBe('--c');
    expect(appSetting(local, {}, WORKER, { [WORKER]: '--b' })).toBe('--b');
    // An unreadable local.settings.json gives nothing, as Core Tools (the host's start warns).
    expect(appSetting(broken, {}, WORKER, {})).toBeUndefined();
  });
});

describe('apps started with --inspect', () => {
  let stack: Stack;
  afterAll(() => stack?.stop());

  /**
   * The port the process of `component` says its inspector listens on, and the targets it lists there.
   * Its line is awaited: the launcher copies the process's output into its log through a write stream, so
   * the line may land a moment after the start resolves.
   */
  async function inspector(component: string) {
    const port = await waitFor(
      `${component}'s inspector in its log`,
      () =>
        /Debugger listening on ws:\/\/127\.0\.0\.1:(\d+)\//.exec(
          readFileSync(stack.description.logs[component] as string, 'utf8'),
        )?.[1],
      10_000,
    );
    return (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { type: string }[];
  }
  const argv = (name: string) => readFileSync(`/proc/${stack.pids()[name]}/cmdline`, 'utf8').split('\0');
  const environ = (name: string) => readFileSync(`/proc/${stack.pids()[name]}/environ`, 'utf8').split('\0');

  it('runs each host with what its app asks for: a debugger can attach to it, and to nothing else', async () => {
    const appsFile = join(data.dir, 'apps.json');
    const apps = {
      fn: {
        kind: 'functionapp',
        folder: 'emulators/functions-host/test/app-cjs',
        localPort: 7090,
        settings: {},
      },
      echo: { kind: 'webapp', folder: 'emulators/appservice/test/app', localPort: 5090, settings: {} },
    };
    writeFileSync(appsFile, JSON.stringify({ apps }));
    stack = await start({
      dataDir: data.dir,
      ports: 'free',
      console: false,
      appsFile,
      components: ['fn', 'echo', 'eventgrid'],
      settings: {
        fn: { [WORKER]: ' --inspect=127.0.0.1:0  --no-deprecation' },
        echo: { NODE_OPTIONS: '--inspect=127.0.0.1:0' },
      },
    });
    expect(argv('fn')).toEqual(expect.arrayContaining(['--inspect=127.0.0.1:0', '--no-deprecation']));
    expect((await inspector('fn-host')).map((target) => target.type)).toEqual(['node']);
    expect(environ('echo')).toContain('NODE_OPTIONS=--inspect=127.0.0.1:0');
    expect((await inspector('echo')).map((target) => target.type)).toEqual(['node']);
    expect(argv('eventgrid').filter((arg) => arg.startsWith('--inspect'))).toEqual([]);
    expect(environ('eventgrid').filter((entry) => entry.includes('--inspect'))).toEqual([]);
    // Both serve as ever while their inspectors listen.
    expect(await (await fetch(`${stack.description.apps.fn?.url}/api/hello/you`)).text()).toBe('Hello, you');
    expect((await fetch(stack.description.apps.echo?.url as string)).status).toBe(200);
  });
});
