/** The host's home page at `/`, and a function app that serves `/` itself (an empty routePrefix). */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { appPath } from './test/helpers.ts';

const data = testDataDir();
let host: ComponentUnderTest;
let base: string;

beforeAll(async () => {
  const settings = { AzureWebJobsSecretStorageType: 'files', AzureWebJobsDisableHomepage: 'True' };
  host = await startComponent('functions', { port: 0, appDir: appPath('app-routes'), settings }, data.dir);
  base = host.endpoints.baseUrl as string;
});

afterAll(async () => {
  await host?.stop();
  data.remove();
});

it("lets a function whose route matches `/` answer it: the host's home page is only for a request no function takes", async () => {
  const root = await fetch(`${base}/`);
  expect(root.status).toBe(200);
  expect(await root.text()).toBe('site: (root)');
  expect(await (await fetch(`${base}/a/b`)).text()).toBe('site: a/b');
});

it('answers 204 (empty) where the home page would be, with AzureWebJobsDisableHomepage true', async () => {
  for (const method of ['POST', 'HEAD']) {
    const response = await fetch(`${base}/`, { method });
    expect(response.status, method).toBe(204);
    expect(await response.text()).toBe('');
  }
});
