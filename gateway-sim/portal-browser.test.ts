/**
 * The developer portal as a person uses it, in Debian's chromium (playwright-core, headless, a fresh
 * profile), against the stack but web app B and Event Grid (neither is behind the gateway): sign in as a
 * test user at the identity provider, see the subscription key, and Try it on managetask (with the
 * EntraID token) and on the web API.
 * Screenshots go to test-results/portal/ (ignored by git).
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadTls } from '../emulators/core/ca.ts';
import { launchChromium, testDataDir } from '../emulators/core/testing.ts';
import { type Stack, start } from '../emulators/stack/launcher.ts';

const screenshots = fileURLToPath(new URL('../test-results/portal/', import.meta.url));
const data = testDataDir();
let stack: Stack;
let browser: Browser;

beforeAll(async () => {
  mkdirSync(screenshots, { recursive: true });
  // Chromium starts beside the stack: it needs only the stack's certificate, already in the directory.
  const tls = await loadTls(data.dir);
  [stack, browser] = await Promise.all([
    start({
      dataDir: data.dir,
      ports: 'free',
      console: false,
      components: ['identity', 'keyvault', 'cosmos', 'blob', 'eventhubs', 'gateway', 'functions', 'web'],
    }),
    launchChromium(tls),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  data.remove();
});

// The two tests run side by side: each has a browser context (cookies, session) of its own, and the
// portal keeps a session per sign-in, so neither sees the other's pages.
it.concurrent('a person signs in, sees the subscription key, and tries managetask and the web API through the gateway', async () => {
  const portal = stack.description.endpoints.gateway?.portalUrl as string;
  const alice = stack.description.testUsers?.find((user) => user.userPrincipalName.startsWith('alice'));
  if (!alice) throw new Error('no alice');
  const page = await (await browser.newContext()).newPage();

  await page.goto(portal);
  expect(await page.locator('section.api h2').allTextContents()).toEqual([
    'TaskManagerFunctionsAPI',
    'TaskManagerWebAPI',
  ]);
  await page.screenshot({ path: `${screenshots}apis.png`, fullPage: true });

  await page.click('#sign-in');
  await page.fill('#username', alice.userPrincipalName);
  await page.fill('#password', alice.password);
  await Promise.all([page.waitForURL(`${portal}/`), page.click('button[type=submit]')]);
  expect(await page.locator('#user strong').textContent()).toBe(alice.displayName);
  // Both keys, masked until asked for (as APIM's portal shows them); a summary opens with the keyboard.
  const subscriptions = (await stack.action('gateway', 'subscriptions')) as {
    scope: string;
    primaryKey: string;
    secondaryKey: string;
  }[];
  const all = subscriptions.find((subscription) => subscription.scope === '/apis');
  expect(all?.primaryKey).toBe(stack.description.subscriptionKey);
  await page.screenshot({ path: `${screenshots}signed-in.png`, fullPage: true });
  for (const [slot, key] of [
    ['primary', all?.primaryKey],
    ['secondary', all?.secondaryKey],
  ]) {
    const shown = page.locator(`#${slot}-key`);
    expect(await shown.isVisible()).toBe(false);
    await page.getByText(`Show ${slot} key`).focus();
    await page.keyboard.press('Enter');
    expect(await shown.isVisible()).toBe(true);
    expect(await shown.textContent()).toBe(key);
  }
  await page.screenshot({ path: `${screenshots}keys-shown.png`, fullPage: true });

  // Each Try it button and body has a name of its own, for a screen reader's list of controls.
  for (const operation of ['ManageTask', 'Get Tasks', 'Create Task'])
    expect(await page.getByRole('button', { name: `Try it: ${operation}`, exact: true }).count()).toBe(1);
  for (const operation of ['ManageTask', 'Create Task'])
    expect(await page.getByRole('textbox', { name: `Body of ${operation}`, exact: true }).count()).toBe(1);

  const manageTask = page.locator('#op-task-manager-functions-api-ManageTask');
  await manageTask.locator('textarea[name=body]').fill('{"Title":"from the portal","Description":"tried"}');
  await Promise.all([
    page.waitForURL(`${portal}/try`),
    manageTask.getByRole('button', { name: 'Try it' }).click(),
  ]);
  expect(await page.locator('#request').textContent()).toContain('Authorization: Bearer (your access token)');
  expect(await page.locator('#status').textContent()).toBe('200');
  const created = JSON.parse((await page.locator('#response').textContent()) ?? '');
  expect(created).toMatchObject({ Title: 'from the portal', id: expect.any(String) });
  await page.screenshot({ path: `${screenshots}try-managetask.png`, fullPage: true });

  // Markup in an answer is shown as text: no script runs.
  const dialogs: string[] = [];
  page.on('dialog', async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  await page.goto(`${portal}/`);
  const createTask = page.locator('#op-task-manager-web-api-create-task');
  await createTask.locator('textarea[name=body]').fill('{"title":"<script>alert(1)</script>"}');
  await Promise.all([
    page.waitForURL(`${portal}/try`),
    createTask.getByRole('button', { name: 'Try it' }).click(),
  ]);
  expect(await page.locator('#status').textContent()).toBe('200');

  await page.goto(`${portal}/`);
  const getTasks = page.locator('#op-task-manager-web-api-get-tasks');
  await Promise.all([
    page.waitForURL(`${portal}/try`),
    getTasks.getByRole('button', { name: 'Try it' }).click(),
  ]);
  expect(await page.locator('#request').textContent()).not.toContain('Authorization');
  expect(await page.locator('#status').textContent()).toBe('200');
  const listed = JSON.parse((await page.locator('#response').textContent()) ?? '') as { title: string }[];
  expect(listed.map((task) => task.title)).toContain('<script>alert(1)</script>');
  expect(await page.locator('#response script').count()).toBe(0);
  expect(dialogs).toEqual([]);
  await page.screenshot({ path: `${screenshots}try-get-tasks.png`, fullPage: true });
});

it.concurrent("two tabs sent to sign in at once: the user signs in in one, then in the other; both are signed in, and the first tab's page still works", async () => {
  const portal = stack.description.endpoints.gateway?.portalUrl as string;
  const alice = stack.description.testUsers?.find((user) => user.userPrincipalName.startsWith('alice'));
  if (!alice) throw new Error('no alice');
  const context = await browser.newContext();
  const [first, second] = [await context.newPage(), await context.newPage()];
  const tabs = [first, second];
  // Both are sent to the provider before either signs in: each is a sign-in of its own.
  // The user turns to a tab before acting in it: Chromium hardly draws a tab in the background, and a
  // click there waited a second or two for its frames.
  for (const tab of tabs) {
    await tab.bringToFront();
    await tab.goto(`${portal}/`);
    await tab.click('#sign-in');
  }
  for (const tab of tabs) {
    await tab.bringToFront();
    await tab.fill('#username', alice.userPrincipalName);
    await tab.fill('#password', alice.password);
    // Back at the portal, wherever that is (a refused sign-in stays on the callback's page).
    await Promise.all([
      tab.waitForURL((url) => url.href.startsWith(portal)),
      tab.click('button[type=submit]'),
    ]);
    expect(tab.url()).toBe(`${portal}/`);
    expect(await tab.locator('#user strong').textContent()).toBe(alice.displayName);
  }
  // The first tab's page, shown before the second sign-in, still works: the same user keeps one session.
  await first.bringToFront();
  const getTasks = first.locator('#op-task-manager-web-api-get-tasks');
  await Promise.all([
    first.waitForURL(`${portal}/try`),
    getTasks.getByRole('button', { name: 'Try it' }).click(),
  ]);
  expect(await first.locator('#status').textContent()).toBe('200');
  await context.close();
});
