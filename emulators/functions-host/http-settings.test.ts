/**
 * The HTTP side under an empty routePrefix and app settings: the order of routes, the host's home page at `/` (and a function
 * app that serves `/` itself), FUNCTIONS_REQUEST_BODY_SIZE_LIMIT.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { appPath } from './test/helpers.ts';

const data = testDataDir();
let host: ComponentUnderTest;
let base: string;

beforeAll(async () => {
  const settings = {
    AzureWebJobsSecretStorageType: 'files',
    AzureWebJobsDisableHomepage: 'True',
    FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: '1024',
  };
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

it('refuses a body over FUNCTIONS_REQUEST_BODY_SIZE_LIMIT (1024 bytes here) with 413, empty, and takes one up to it', async () => {
  const upload = (size: number) => fetch(`${base}/upload`, { method: 'POST', body: Buffer.alloc(size) });
  expect(await (await upload(1024)).text()).toBe('1024');
  const over = await upload(1025);
  expect(over.status).toBe(413);
  expect(await over.text()).toBe('');
});

it("tries the routes in the order of the functions' names, as the runtime does, not by how specific they are", async () => {
  const answer = async (path: string) => (await fetch(`${base}${path}`)).text();
  expect(await answer('/products/list')).toBe('details');
  expect(await answer('/products/7')).toBe('details');
  expect(await answer('/items')).toBe('allItems');
  expect(await answer('/items/7')).toBe('item');
});
