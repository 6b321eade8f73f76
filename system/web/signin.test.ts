/**
 * Variant B end to end in a real browser: redirected to the provider, signed in on its page, the
 * display name and mail from Graph, a task created and listed (stored in Cosmos DB), the store's outage
 * a 503 page, sign-out of the app and the provider, then asked to sign in again.
 *
 * The vault, Cosmos DB and the managed-identity endpoint are the stack's. The sign-in provider is a
 * second identity process on the same data directory (same keys, tenant, app registrations and users),
 * started with this app's redirect URIs: the stack registers redirect URIs only for the apps it runs.
 */
import { mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { CosmosClient } from '@azure/cosmos';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EmulatorContext } from '../../emulators/core/emulator.ts';
import { close, LOOPBACK, listen } from '../../emulators/core/http.ts';
import { launchChromium, testContext, testDataDir } from '../../emulators/core/testing.ts';
import { FormClient, type Hop } from '../../emulators/identity/form-client.ts';
import type { Stack } from '../../emulators/stack/launcher.ts';
import { type ComponentUnderTest, startComponent } from '../../emulators/stack/test-support.ts';
import { freePort } from '../functions/test-support.ts';
import { postForm } from './form-client.ts';
import { startStores, startWebApp, TEXTS, type WebApp } from './test-support.ts';

const { BAD_FORM_TOKEN, NOT_JSON, PROFILE_UNAVAILABLE, STORE_UNAVAILABLE, TITLE_REQUIRED, TOO_LARGE } = TEXTS;

const screenshots = fileURLToPath(new URL('../../test-results/web/', import.meta.url));
const data = testDataDir();
let stack: Stack;
let context: EmulatorContext;
let provider: ComponentUnderTest;
let web: WebApp;
let browser: Browser;
let settings: Record<string, string>;
/**
 * A second registered port, for the tests that run the app against a failing directory: beside `web`,
 * which then need not be stopped and started again for the tests after them. Then for the callback-path
 * test, whose port must be registered for its path alone to be refused.
 */
let otherPort: number;

beforeAll(async () => {
  mkdirSync(screenshots, { recursive: true });
  // The data directory's keys and certificates first: the stack and the provider then read the same ones,
  // and start side by side (with the browser, which needs only the certificate).
  context = await testContext(data.dir, { inMemory: true });
  const [port, other] = [await freePort(), await freePort()];
  otherPort = other;
  const callbacks = [port, other].map((p) => `http://127.0.0.1:${p}/signin-oidc`);
  // Chromium does not read NODE_EXTRA_CA_CERTS: it trusts the stack's server key by its SPKI hash.
  [stack, provider, browser] = await Promise.all([
    startStores(data.dir, ['identity', 'keyvault', 'cosmos']),
    startComponent(
      'identity',
      {
        port: 0,
        redirectUris: { taskWeb: callbacks },
        postLogoutRedirectUris: { taskWeb: [`http://127.0.0.1:${port}/`] },
      },
      data.dir,
      { inMemory: true },
    ),
    launchChromium(context.tls),
  ]);
  const registration = context.secrets.directory.applications.taskWeb;
  const { connections, identities } = stack.description;
  const authority = provider.endpoints.authority as string;
  settings = {
    WebAppVariant: 'B',
    AzureAd__Instance: `${authority}/`,
    AzureAd__Domain: 'taskstack.onmicrosoft.com',
    AzureAd__TenantId: context.secrets.tenantId,
    AzureAd__ClientId: registration?.clientId as string,
    AzureAd__ClientSecret: registration?.clientSecret as string,
    GraphBaseUrl: provider.endpoints.graph as string,
    KeyVaultUri: connections.KeyVaultUri as string,
    KeyVaultDisableChallengeResourceVerification: 'true',
    IDENTITY_ENDPOINT: identities.webApp?.IDENTITY_ENDPOINT as string,
    IDENTITY_HEADER: identities.webApp?.IDENTITY_HEADER as string,
    SessionSecret: 'the session secret of the sign-in test',
  };
  web = await startWebApp(settings, port);
});
afterAll(async () => {
  await browser?.close();
  await web?.stop();
  await provider?.stop();
  await stack?.stop();
  data.remove();
});

const user = (name: string) => ({
  ...context.topology.directory.users[name],
  ...context.secrets.directory.users[name],
});

/** Opens the app (`web` unless told) in a fresh browser profile and signs in on the provider's page as `name`. */
async function signIn(name: string, app = web): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await page.goto(app.url);
  expect(page.url().startsWith(`${provider.endpoints.authority}/`)).toBe(true);
  const { userPrincipalName, password } = user(name);
  await page.fill('#username', userPrincipalName as string);
  await page.fill('#password', password as string);
  await Promise.all([page.waitForURL(`${app.url}/`), page.click('button[type=submit]')]);
  return page;
}

/**
 * Signs in as `name` without a browser, for the tests whose subject is the app's answers to a signed-in
 * user rather than what a browser does: fetch with a cookie jar through the same redirects and the
 * provider's form (a Chromium profile and its sign-in cost ~1.5 s of CPU). Answers the client and the
 * answers from the credentials' post to the first that is not a redirect, in order.
 */
async function signInByForm(name: string, app = web): Promise<{ client: FormClient; hops: Hop[] }> {
  const client = new FormClient();
  const page = await client.follow(`${app.url}/`);
  expect(page.url.startsWith(`${provider.endpoints.authority}/`)).toBe(true);
  const { userPrincipalName, password } = user(name);
  const hops = [await client.signIn(page, userPrincipalName as string, password as string)];
  // Each redirect followed in turn, as a browser does; a loop of them stops at 20.
  for (let location = hops[0]?.location; location && hops.length < 20; location = hops.at(-1)?.location)
    hops.push(await client.request(location));
  // Back at the app's start page, as signIn waits for.
  expect(hops.at(-1)?.url).toBe(`${app.url}/`);
  return { client, hops };
}

/** The Cookie header a browser would send the app (cookies are by host, whatever the port). */
const cookieOf = (client: FormClient) =>
  [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; ');

const tasksContainer = () =>
  new CosmosClient(stack.description.secrets.DocumentDbConnection as string)
    .database('TasksDB')
    .container('Tasks');

describe('variant B in chromium', () => {
  it('signs in on the provider, shows name and mail, creates a task, survives a store outage, signs out', async () => {
    const page = await signIn('alice');
    const alice = user('alice');
    expect(await page.textContent('#display-name')).toBe(alice.displayName);
    expect(await page.textContent('#mail')).toBe(`(${alice.mail})`);
    await page.screenshot({ path: `${screenshots}variant-b-signed-in.png`, fullPage: true });

    await page.fill('#title', 'Plan the <b>offsite</b>');
    await page.fill('#description', 'two days');
    await page.fill('#dueDate', '2027-06-15');
    await Promise.all([page.waitForURL(`${web.url}/`), page.click('#create-button')]);
    const row = page.locator('#tasks tbody tr', { hasText: 'offsite' });
    expect(await row.locator('td').allTextContents()).toEqual([
      'Plan the <b>offsite</b>',
      'two days',
      '2027-06-15',
    ]);
    await page.screenshot({ path: `${screenshots}variant-b-created.png`, fullPage: true });

    // Stored in Cosmos DB in the function app's shape; the API (with the browser's session) lists it.
    const { resources } = await tasksContainer().items.readAll().fetchAll();
    expect(resources.map(({ Title, Description, DueDate }) => ({ Title, Description, DueDate }))).toEqual([
      { Title: 'Plan the <b>offsite</b>', Description: 'two days', DueDate: '2027-06-15' },
    ]);
    const api = await page.request.get(`${web.url}/api/tasks`);
    expect(api.status()).toBe(200);
    expect(await api.json()).toEqual([
      {
        id: resources[0]?.id,
        title: 'Plan the <b>offsite</b>',
        description: 'two days',
        dueDate: '2027-06-15',
      },
    ]);

    // Cosmos DB down: a clear 503 page, and the app serves again once it is back.
    await stack.stopComponent('cosmos');
    try {
      const down = await page.goto(web.url);
      expect(down?.status()).toBe(503);
      expect(await page.textContent('body')).toBe(STORE_UNAVAILABLE);
    } finally {
      await stack.startComponent('cosmos');
    }
    expect((await page.goto(web.url))?.status()).toBe(200);
    expect(web.running()).toBe(true);

    // Sign out: the app's session, then the provider's (its confirmation), back to the start page,
    // which asks for the password again.
    await Promise.all([page.waitForURL(`${provider.endpoints.authority}/**`), page.click('#sign-out')]);
    await page.screenshot({ path: `${screenshots}variant-b-provider-sign-out.png`, fullPage: true });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForSelector('#password');
    expect(page.url().startsWith(`${provider.endpoints.authority}/`)).toBe(true);
    expect((await page.context().cookies(web.url)).map((c) => c.name)).not.toContain('taskstack.b.session');
    await page.screenshot({ path: `${screenshots}variant-b-signed-out.png`, fullPage: true });
  });

  it('shows the user principal name for a user without mail', async () => {
    // What the app answers, not what a browser does: its page's text, read without a browser.
    const page = (await signInByForm('bob')).hops.at(-1)?.body as string;
    const textOf = (id: string) => new RegExp(`<span id="${id}">([^<]*)</span>`).exec(page)?.[1];
    expect(textOf('display-name')).toBe(user('bob').displayName);
    expect(textOf('mail')).toBe(`(${user('bob').userPrincipalName})`);
  });

  it('signed in, the JSON API and the Create form answer and refuse as in variant A; refusals store nothing', async () => {
    const { client, hops } = await signInByForm('alice');
    const cookie = cookieOf(client);
    const api = `${web.url}/api/tasks`;
    const json = (body: string) =>
      fetch(api, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body });
    const created = await json(JSON.stringify({ title: 'via the API', dueDate: 'soon', id: 'mine' }));
    expect(created.status).toBe(200);
    const task = (await created.json()) as { id: string };
    expect(task).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      title: 'via the API',
      description: null,
      dueDate: 'soon',
    });
    expect((await tasksContainer().item(task.id, task.id).read()).resource).toMatchObject({
      Title: 'via the API',
    });
    const stored = (await tasksContainer().items.readAll().fetchAll()).resources.length;

    const token = /name="_csrf" value="([^"]+)"/.exec(hops.at(-1)?.body as string)?.[1] as string;
    const form = (fields: Record<string, string>) => postForm(web.url, '/tasks', fields, cookie);
    const cases: [Promise<Response>, number, string][] = [
      [json('{"title":""}'), 400, TITLE_REQUIRED],
      [json('{"title": "broken'), 400, NOT_JSON],
      [json(JSON.stringify({ title: 'big', description: 'x'.repeat(10 * 1024 * 1024) })), 413, TOO_LARGE],
      [form({ _csrf: `${token}0`, title: 'forged' }), 403, BAD_FORM_TOKEN],
      [postForm(web.url, '/signout', { _csrf: 'forged' }, cookie), 403, BAD_FORM_TOKEN],
    ];
    for (const [pending, status, text] of cases) {
      const response = await pending;
      expect({ status: response.status, text: await response.text() }).toEqual({ status, text });
    }
    const missing = await form({ _csrf: token, title: '' });
    expect(missing.status).toBe(400);
    expect(await missing.text()).toContain(
      `<p class="message" id="message" role="alert">${TITLE_REQUIRED}</p>`,
    );
    expect((await tasksContainer().items.readAll().fetchAll()).resources.length).toBe(stored);
    expect(web.running()).toBe(true);
  });

  it('two tabs sent to sign in at once: the user signs in in one, then in the other; both are signed in', async () => {
    const context = await browser.newContext();
    const [first, second] = [await context.newPage(), await context.newPage()];
    // Both are sent to the provider before either signs in: each is a sign-in of its own.
    await first.goto(web.url);
    await second.goto(web.url);
    const { userPrincipalName, password } = user('alice');
    for (const page of [first, second]) {
      // The user turns to the tab (Chromium hardly draws a tab in the background, and a click there
      // waited a second or two for its frames).
      await page.bringToFront();
      expect(page.url().startsWith(`${provider.endpoints.authority}/`)).toBe(true);
      await page.fill('#username', userPrincipalName as string);
      await page.fill('#password', password as string);
      // Back at the app, wherever that is (a refused sign-in stays on the callback's page).
      await Promise.all([
        page.waitForURL((url) => url.origin === web.url),
        page.click('button[type=submit]'),
      ]);
      expect(page.url()).toBe(`${web.url}/`);
      expect(await page.textContent('#display-name')).toBe(user('alice').displayName);
    }
    // The first tab's form, shown before the second tab's sign-in, is still the signed-in user's form.
    await first.bringToFront();
    await first.fill('#title', 'made in the first tab');
    const [created] = await Promise.all([
      first.waitForResponse(`${web.url}/tasks`),
      first.click('#create-button'),
    ]);
    expect(created.status()).toBe(303);
    await first.waitForURL(`${web.url}/`);
    expect(await first.locator('#tasks td.title', { hasText: 'first tab' }).count()).toBe(1);
  });

  it('after sign-out, going back shows no page of the signed-in user', async () => {
    const page = await signIn('alice');
    // The user opens the app again from a bookmark: a history entry of its own.
    await page.goto(web.url);
    await Promise.all([page.waitForURL(`${provider.endpoints.authority}/**`), page.click('#sign-out')]);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForSelector('#password');
    // Back through the provider's pages to the app's: each is asked of its server again, none shown
    // from the browser's cache (which, before, showed Alice's name and tasks to whoever came next).
    const names: string[] = [];
    for (let step = 0; step < 4; step++) {
      await page.goBack();
      names.push(...(await page.locator('#display-name').allTextContents()));
    }
    expect(names).toEqual([]);
  });

  it('Sign out after the app restarted (its tokens gone) signs the user out, not in again', async () => {
    const page = await signIn('alice');
    // The same app on the same port: the session cookie is still valid (same SessionSecret), the tokens
    // in MSAL's memory are gone.
    const port = Number(new URL(web.url).port);
    await web.stop();
    web = await startWebApp(settings, port);
    // Where the user lands: the provider's sign-out page, or (before) the app, signed in again silently
    // by the provider's session.
    const landed = (url: URL) => url.pathname.endsWith('/oauth2/v2.0/logout') || url.href === `${web.url}/`;
    await Promise.all([page.waitForURL(landed), page.click('#sign-out')]);
    expect(new URL(page.url()).pathname).toMatch(/\/oauth2\/v2\.0\/logout$/);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForSelector('#password');
    expect((await page.context().cookies(web.url)).map((c) => c.name)).not.toContain('taskstack.b.session');
  });

  it('a signed-in session cookie that was tampered with counts as none: sent to sign in again', async () => {
    const session = (await signInByForm('alice')).client.cookies.get('taskstack.b.session') as string;
    const forged = session.replace(/\.[^.]+$/, '.AAAA');
    const response = await fetch(`${web.url}/`, {
      headers: { cookie: `taskstack.b.session=${forged}` },
      redirect: 'manual',
    });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toContain(`${provider.endpoints.authority}/`);
    const api = await fetch(`${web.url}/api/tasks`, { headers: { cookie: `taskstack.b.session=${forged}` } });
    expect(api.status).toBe(401);
    // Nothing secret reached the log: settings, cookies, tokens (a JWT starts with eyJ).
    const secrets = [settings.AzureAd__ClientSecret, settings.SessionSecret, settings.IDENTITY_HEADER];
    for (const secret of [...secrets, session, user('alice').password])
      expect(web.output()).not.toContain(secret as string);
    expect(web.output()).not.toContain('eyJ');
  });

  it('one browser uses A and B side by side on the same host (other ports): neither loses its session', async () => {
    const a = await startWebApp({});
    try {
      const onB = await signIn('alice');
      const onA = await onB.context().newPage();
      // The same host for both: the browser sends each app the other's cookies too.
      expect(new URL(a.url).hostname).toBe(new URL(web.url).hostname);
      await onA.goto(a.url);
      // B is still signed in: its page answers without a detour through the provider.
      const again = await onB.goto(web.url);
      expect(again?.status()).toBe(200);
      expect(again?.request().redirectedFrom()).toBeNull();
      expect(await onB.textContent('#display-name')).toBe(user('alice').displayName);
      // A's form, opened before B's page was shown again, is still A's session's form.
      await onA.fill('#title', 'made on A between visits to B');
      await Promise.all([onA.waitForURL(`${a.url}/`), onA.click('#create-button')]);
      expect(await onA.locator('#tasks tbody tr td.title').allTextContents()).toEqual([
        'made on A between visits to B',
      ]);
      // And B's form, shown before A's Create, is still B's (the user back on B's tab).
      await onB.bringToFront();
      await onB.fill('#title', 'made on B between visits to A');
      await Promise.all([onB.waitForURL(`${web.url}/`), onB.click('#create-button')]);
      expect(await onB.locator('#tasks tbody tr td.title', { hasText: 'visits to A' }).count()).toBe(1);
      const names = (await onB.context().cookies(web.url))
        .map((c) => c.name)
        .filter((name) => name.startsWith('taskstack.'))
        .sort();
      expect(names).toEqual([
        'taskstack.a.form',
        'taskstack.a.session',
        'taskstack.b.form',
        'taskstack.b.session',
      ]);
    } finally {
      await a.stop();
    }
  });

  describe('a directory that fails', () => {
    /** How Graph answers the app on the other port: each test says, before it signs in. */
    let answer: (req: IncomingMessage, res: ServerResponse) => void;
    const directory = createServer((req, res) => answer(req, res));
    /**
     * One app for these tests, on the other registered port, its Graph the one above: each test signs
     * in with a browser profile of its own and reads only the log lines written since it began.
     */
    let failing: WebApp;
    let logged = 0;
    const logSinceStart = () => failing.output().slice(logged);
    beforeAll(async () => {
      const graph = `http://${LOOPBACK}:${await listen(directory, 0)}/v1.0`;
      failing = await startWebApp({ ...settings, GraphBaseUrl: graph }, otherPort);
    });
    beforeEach(() => {
      logged = failing.output().length;
    });
    afterAll(async () => {
      await failing?.stop();
      await close(directory);
    });

    it('refusing every call: the signed-in page answers 503 with a clear text, and the app serves on', async () => {
      // The provider's Graph at a path it does not serve: its answer to every call is a refusal.
      answer = async (req, res) => {
        const path = (req.url as string).replace(/^\/v1\.0/, '/nowhere');
        const refused = await fetch(`${provider.endpoints.graph}${path}`, {
          headers: { authorization: req.headers.authorization ?? '' },
        });
        res.writeHead(refused.status, {
          'content-type': refused.headers.get('content-type') ?? 'text/plain',
        });
        res.end(await refused.text());
      };
      const { client } = await signInByForm('alice', failing);
      const down = await client.request(`${failing.url}/`);
      expect(down.status).toBe(503);
      expect(down.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(down.body).toBe(PROFILE_UNAVAILABLE);
      expect(logSinceStart()).toMatch(/Graph \/me: Graph answered 4\d\d/);
      expect(failing.running()).toBe(true);
    });

    it('answering what is not a profile (200 null): 503 with a clear text, not a 500', async () => {
      answer = (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('null');
      };
      const { client } = await signInByForm('alice', failing);
      const down = await client.request(`${failing.url}/`);
      expect({ status: down.status, text: down.body }).toEqual({
        status: 503,
        text: PROFILE_UNAVAILABLE,
      });
      expect(logSinceStart()).toContain('Graph /me: Graph answered 200 with null, not a profile');
      expect(failing.running()).toBe(true);
    });

    it('refusing every token: 503 with a clear text, not a loop of sign-ins', async () => {
      // Graph answering 401 whatever the token (as for a token it will not take, however fresh).
      const tokens: string[] = [];
      answer = (req, res) => {
        tokens.push(req.headers.authorization ?? '');
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(
          '{"error":{"code":"InvalidAuthenticationToken","message":"Access token validation failure."}}',
        );
      };
      const { hops } = await signInByForm('alice', failing);
      const signIns = hops.filter((hop) => hop.url.startsWith(`${failing.url}/signin-oidc`));
      const landed = hops.at(-1) as Hop;
      expect({ status: landed.status, text: landed.body }).toEqual({
        status: 503,
        text: PROFILE_UNAVAILABLE,
      });
      // Signed in once: the app asked the provider for a new token, not the user to sign in again.
      expect(signIns).toHaveLength(1);
      expect(tokens).toHaveLength(2);
      expect(new Set(tokens).size).toBe(2);
      expect(logSinceStart()).toContain('Graph /me: Graph answered 401');
    });
  });

  it('a callback path the registration does not list is refused by the provider', async () => {
    // On the other registered port (free once the failing-directory tests are done): only the path is wrong.
    const other = await startWebApp({ ...settings, AzureAd__CallbackPath: '/elsewhere' }, otherPort);
    try {
      const redirect = await fetch(`${other.url}/`, { redirect: 'manual' });
      const location = redirect.headers.get('location') as string;
      expect(new URL(location).searchParams.get('redirect_uri')).toBe(`${other.url}/elsewhere`);
      const refused = await fetch(location, { redirect: 'manual' });
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain('AADSTS50011');
    } finally {
      await other.stop();
    }
  });
});
