import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, expect, it } from 'vitest';
import { testContext, testDataDir, waitFor } from '../core/testing.ts';
import { appPath } from '../functions-host/test/helpers.ts';
import { ComponentProcess, componentEntry } from './component.ts';
import { Console } from './console.ts';
import { startMessage } from './test-support.ts';

const data = testDataDir();
afterAll(() => data.remove());

// The launcher forks an app's process while the services it uses start, and sends it its options once
// the app is built (`load`): the functions host imports the app meanwhile, and its `start` uses that
// import. That `load` waits for the build, a clean clone's launcher tests prove: there, the function
// app's dist/ exists only once the launcher's build step has run.
it('imports a function app as soon as its process is forked, once, and again in a restarted process', async () => {
  const context = await testContext(data.dir);
  const lines: string[] = [];
  const out = new PassThrough();
  out.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n')));
  const imports = () =>
    lines.filter((line) => line.includes('app-load imported (LOAD_SETTING=ahead)')).length;
  const options = {
    port: 0,
    appDir: appPath('app-load'),
    settings: { AzureWebJobsSecretStorageType: 'files', LOAD_SETTING: 'ahead' },
  };
  const component = new ComponentProcess(
    'functions',
    startMessage('functions', options, context),
    process.env,
    join(data.dir, 'functions.log'),
    new Console(['functions'], out),
    await componentEntry('functions'),
  );
  try {
    component.prepare();
    await waitFor('the app imported before its start', () => imports() === 1, 20_000);
    const { baseUrl } = await component.launch();
    expect(await (await fetch(`${baseUrl}/api/loaded`)).text()).toBe('ahead');
    expect(imports()).toBe(1);

    process.kill(component.pid ?? 0, 'SIGKILL');
    await waitFor('the restarted host', () => lines.some((line) => line.endsWith('restarted')), 20_000);
    expect(imports()).toBe(2);
    expect(await (await fetch(`${component.endpoints.baseUrl}/api/loaded`)).text()).toBe('ahead');
  } finally {
    await component.stop();
  }
});
