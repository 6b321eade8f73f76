/** What the platform tells a function app of its site, as App Service does, and the host id it gives. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testContext, testDataDir } from '../core/testing.ts';
import { freePort } from '../stack/ports.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import { startComponent } from '../stack/test-support.ts';
import { defaultHostId } from './host.ts';
import { appPath, hostIdOf } from './test/helpers.ts';

const data = testDataDir();
let host: ComponentUnderTest;
let port: number;

beforeAll(async () => {
  port = await freePort();
  host = await startComponent(
    'functions',
    {
      port,
      appDir: appPath('app-platform'),
      siteName: 'Task-Functions',
      sku: 'Dynamic',
      settings: { AzureWebJobsSecretStorageType: 'files' },
    },
    data.dir,
  );
});

afterAll(async () => {
  await host?.stop();
  data.remove();
});

it("gives the app its site's name, host, plan tier and instance before the app's code runs", async () => {
  const response = await fetch(`${host.endpoints.baseUrl}/api/platform`);
  expect(await response.json()).toEqual({
    WEBSITE_SITE_NAME: 'Task-Functions',
    WEBSITE_HOSTNAME: `127.0.0.1:${port}`,
    WEBSITE_SKU: 'Dynamic',
    WEBSITE_INSTANCE_ID: expect.stringMatching(/^[0-9a-f]{64}$/),
  });
});

it("takes its host id from the site's name, as the runtime does on App Service", async () => {
  const { masterKey } = (await testContext(data.dir)).secrets;
  expect(await hostIdOf(host, masterKey)).toBe('task-functions');
  // The runtime's first 32 characters, lower case, without a trailing '-'.
  const site = { WEBSITE_INSTANCE_ID: 'f'.repeat(64) };
  const long = 'TaskManagementService-Functions-West';
  expect(defaultHostId('/app', { ...site, WEBSITE_SITE_NAME: long })).toBe('taskmanagementservice-functions');
  // Without a site (as `func start`), the machine's name and the app's folder.
  expect(defaultHostId('/app', {})).not.toContain('taskmanagement');
});

it('refuses a site without the port it is reached at: the app is told its host before the host listens', async () => {
  const options = { port: 0, appDir: appPath('app-platform'), siteName: 'x', sku: 'Dynamic' };
  const started = await startComponent('functions', options, data.dir).catch((error: Error) => error);
  if (!(started instanceof Error)) await started.stop();
  expect(String(started)).toContain('a site (siteName) needs its port and its plan (sku)');
});
