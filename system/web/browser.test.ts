/**
 * Variant A in a real browser: Debian's chromium driven by playwright-core (headless, no sandbox, a
 * fresh profile per run). Screenshots go to test-results/web/ (ignored by git).
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../emulators/core/testing.ts';
import { startWebApp, type WebApp } from './test-support.ts';

const screenshots = fileURLToPath(new URL('../../test-results/web/', import.meta.url));
let browser: Browser;
let web: WebApp;

beforeAll(async () => {
  mkdirSync(screenshots, { recursive: true });
  [browser, web] = await Promise.all([launchChromium(), startWebApp({})]);
});
afterAll(async () => {
  await browser?.close();
  await web?.stop();
});

/** A page in a fresh context (its own cookies) that fails the test if any script dialog opens. */
async function freshPage(): Promise<{ page: Page; dialogs: string[] }> {
  const page = await (await browser.newContext()).newPage();
  const dialogs: string[] = [];
  page.on('dialog', async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  return { page, dialogs };
}

describe('variant A in chromium', () => {
  it('opens Index, creates a task through the form and sees it listed', async () => {
    const { page } = await freshPage();
    await page.goto(web.url);
    expect(await page.locator('#no-tasks').textContent()).toBe('No tasks yet.');
    await page.fill('#title', 'Book the venue');
    await page.fill('#description', 'for the spring party');
    await page.fill('#dueDate', '2027-03-21');
    await Promise.all([page.waitForURL(`${web.url}/`), page.click('#create-button')]);
    const row = page.locator('#tasks tbody tr', { hasText: 'Book the venue' });
    expect(await row.locator('td').allTextContents()).toEqual([
      'Book the venue',
      'for the spring party',
      '2027-03-21',
    ]);
    await page.screenshot({ path: `${screenshots}variant-a-created.png`, fullPage: true });
  });

  it('shows <script>alert(1)</script> as a title, as text: no script runs', async () => {
    const { page, dialogs } = await freshPage();
    await page.goto(web.url);
    await page.fill('#title', '<script>alert(1)</script>');
    await Promise.all([page.waitForURL(`${web.url}/`), page.click('#create-button')]);
    const cell = page.locator('#tasks td.title', { hasText: 'alert(1)' });
    expect(await cell.textContent()).toBe('<script>alert(1)</script>');
    expect(await cell.locator('script').count()).toBe(0);
    expect(dialogs).toEqual([]);
    await page.screenshot({ path: `${screenshots}variant-a-markup-as-text.png`, fullPage: true });
  });

  it('a long title and description without spaces wrap: the list stays as wide as the window', async () => {
    const { page } = await freshPage();
    await page.goto(web.url);
    await page.fill('#title', `https://example.com/${'a'.repeat(300)}`);
    await page.fill('#description', 'x'.repeat(2000));
    await page.fill('#dueDate', '2027-05-01');
    await Promise.all([page.waitForURL(`${web.url}/`), page.click('#create-button')]);
    // The API takes any text as a due date.
    await page.request.post(`${web.url}/api/tasks`, { data: { title: 'due', dueDate: 'd'.repeat(500) } });
    await page.reload();
    const widths = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      window: document.documentElement.clientWidth,
    }));
    expect(widths.page).toBeLessThanOrEqual(widths.window);
    // Every task's due date is on screen, the long one's included.
    const due = page.locator('#tasks td.due-date', { hasText: '2027-05-01' });
    const box = await due.boundingBox();
    expect((box?.x ?? Infinity) + (box?.width ?? 0)).toBeLessThanOrEqual(widths.window);
    await page.screenshot({ path: `${screenshots}variant-a-long-task.png`, fullPage: true });
  });

  it('a title of only spaces is refused: the field is focused, marked invalid and described by the message', async () => {
    const { page } = await freshPage();
    await page.goto(web.url);
    await page.fill('#title', '   ');
    await page.fill('#description', 'kept');
    const [response] = await Promise.all([
      page.waitForResponse(`${web.url}/tasks`),
      page.click('#create-button'),
    ]);
    expect(response.status()).toBe(400);
    await page.waitForSelector('#message');
    // What assistive technology is told about the Title field (Chromium's accessibility tree).
    const cdp = await page.context().newCDPSession(page);
    const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as {
      nodes: {
        role?: { value: string };
        name?: { value: string };
        description?: { value: string };
        properties?: { name: string; value: { value: unknown } }[];
      }[];
    };
    const title = nodes.find((node) => node.role?.value === 'textbox' && node.name?.value === 'Title');
    const invalid = title?.properties?.find((property) => property.name === 'invalid')?.value.value;
    expect({ invalid, description: title?.description?.value }).toEqual({
      invalid: 'true',
      description: 'Title is required.',
    });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('title');
    expect(await page.inputValue('#description')).toBe('kept');
  });

  it('a form whose token was forged is refused and nothing is listed', async () => {
    const { page } = await freshPage();
    await page.goto(web.url);
    await page
      .locator('input[name="_csrf"]')
      .first()
      .evaluate((input) => {
        (input as HTMLInputElement).value = 'forged.token';
      });
    await page.fill('#title', 'should not exist');
    const [response] = await Promise.all([
      page.waitForResponse(`${web.url}/tasks`),
      page.click('#create-button'),
    ]);
    expect(response.status()).toBe(403);
    await page.goto(web.url);
    expect(await page.locator('#tasks', { hasText: 'should not exist' }).count()).toBe(0);
  });
});
