/**
 * Variant B against the stack (identity, Key Vault, Cosmos DB): its settings, what a visitor who has
 * not signed in gets, and the sign-in callback's refusals.
 */
import { CosmosClient } from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDataDir } from '../../emulators/core/testing.ts';
import type { Stack } from '../../emulators/stack/launcher.ts';
import { freePort } from '../functions/test-support.ts';
import { cookiesOf, postForm } from './form-client.ts';
import { postJson, startStores, startWebApp, TEXTS, type WebApp } from './test-support.ts';

const { SIGN_IN_FAILED, SIGN_IN_REQUIRED, SIGN_IN_UNAVAILABLE } = TEXTS;

const TEXT = 'text/plain; charset=utf-8';
const CLIENT_SECRET = 'a client secret that must never be logged';
const SESSION_SECRET = 'a session secret that must never be logged';

const data = testDataDir();
let stack: Stack;
let web: WebApp;
let settings: Record<string, string>;
let authority: string;

beforeAll(async () => {
  stack = await startStores(data.dir, ['identity', 'keyvault', 'cosmos']);
  const { authUrl, connections, identities, endpoints } = stack.description;
  const tenant = new URL(endpoints.identity?.issuer as string).pathname.split('/')[1] as string;
  authority = `${authUrl}/${tenant}`;
  settings = {
    WebAppVariant: 'B',
    AzureAd__Instance: `${authUrl}/`,
    AzureAd__Domain: 'taskstack.test',
    AzureAd__TenantId: tenant,
    AzureAd__ClientId: '00000000-0000-0000-0000-0000000000b1',
    AzureAd__ClientSecret: CLIENT_SECRET,
    KeyVaultUri: connections.KeyVaultUri as string,
    KeyVaultDisableChallengeResourceVerification: 'true',
    IDENTITY_ENDPOINT: identities.webApp?.IDENTITY_ENDPOINT as string,
    IDENTITY_HEADER: identities.webApp?.IDENTITY_HEADER as string,
    SessionSecret: SESSION_SECRET,
  };
  web = await startWebApp(settings);
});
afterAll(async () => {
  await web?.stop();
  await stack?.stop();
  data.remove();
});

/** The documents of TasksDB/Tasks, read directly with the stack's connection string. */
async function storedTasks(): Promise<unknown[]> {
  const cosmos = new CosmosClient(stack.description.secrets.DocumentDbConnection as string);
  const { resources } = await cosmos.database('TasksDB').container('Tasks').items.readAll().fetchAll();
  return resources;
}

describe('settings', () => {
  it('refuses to start with a WebAppVariant other than A or B, naming the setting', async () => {
    await expect(startWebApp({ WebAppVariant: 'C' })).rejects.toThrow(
      'the app setting WebAppVariant must be A or B (or absent, meaning A); it is "C"',
    );
  });

  it('variant B refuses to start without its settings, naming the first one missing (never a value)', async () => {
    for (const missing of ['SessionSecret', 'AzureAd__Instance', 'AzureAd__ClientSecret', 'KeyVaultUri']) {
      const { [missing]: _, ...rest } = settings;
      const failure = await startWebApp(rest).then(
        () => 'started',
        (error: Error) => error.message,
      );
      expect(failure).toContain(`the app setting ${missing} is missing or empty`);
      expect(failure).not.toContain(CLIENT_SECRET);
    }
    await expect(startWebApp({ ...settings, AzureAd__CallbackPath: 'signin-oidc' })).rejects.toThrow(
      'the app setting AzureAd__CallbackPath must start with /',
    );
  });
});

describe('before sign-in', () => {
  it('a page sends the visitor to the provider: authorization code with PKCE (S256), callback /signin-oidc', async () => {
    const response = await fetch(`${web.url}/`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location') as string);
    expect(`${location.origin}${location.pathname}`).toBe(`${authority}/oauth2/v2.0/authorize`);
    const query = Object.fromEntries(location.searchParams);
    expect(query).toMatchObject({
      client_id: settings.AzureAd__ClientId,
      response_type: 'code',
      redirect_uri: `${web.url}/signin-oidc`,
      response_mode: 'query',
      code_challenge_method: 'S256',
      code_challenge: expect.stringMatching(/^[\w-]{43}$/),
      state: expect.any(String),
    });
    expect((query.scope as string).split(' ').sort()).toEqual([
      'User.Read',
      'offline_access',
      'openid',
      'profile',
    ]);
    // Named after its state, sent only to the callback: each sign-in under way has its own.
    const signIn = response.headers
      .getSetCookie()
      .find((c) => c.startsWith(`taskstack.b.signin.${query.state}=s%3A`));
    expect(signIn).toMatch(/; Max-Age=600; Path=\/signin-oidc; Expires=[^;]+; HttpOnly; SameSite=Lax$/);
    // The PKCE verifier stays in the signed cookie; the provider sees only its hash.
    expect(signIn).not.toContain(query.code_challenge);
  });

  it('the JSON API answers 401 Sign-in required.; Create is sent to sign in; SignOut without its form token 403; nothing is stored', async () => {
    for (const response of [await fetch(`${web.url}/api/tasks`), await postJson(web.url, '{"title":"t"}')]) {
      expect(response.status).toBe(401);
      expect(response.headers.get('content-type')).toBe(TEXT);
      expect(await response.text()).toBe(SIGN_IN_REQUIRED);
    }
    const create = await postForm(web.url, '/tasks', { title: 'anonymous' });
    expect(create.status).toBe(302);
    expect(create.headers.get('location')).toContain(`${authority}/oauth2/v2.0/authorize?`);
    // SignOut needs no signed-in user, but its form token.
    const signOut = await postForm(web.url, '/signout', {});
    expect(signOut.status).toBe(403);
    expect(await signOut.text()).toBe(TEXTS.BAD_FORM_TOKEN);
    expect(await storedTasks()).toEqual([]);
  });

  it('the CSP lets forms be redirected to the provider only', async () => {
    const response = await fetch(`${web.url}/`, { redirect: 'manual' });
    expect(response.headers.get('content-security-policy')).toContain(
      `form-action 'self' ${new URL(stack.description.authUrl).origin}`,
    );
  });

  it('a session cookie the app cannot verify counts as none: sent to sign in, the API answers 401', async () => {
    const cookie =
      'taskstack.b.session=s%3Aj%3A%7B%22sid%22%3A%22x%22%2C%22account%22%3A%22someone%22%7D.forged';
    const page = await fetch(`${web.url}/`, { redirect: 'manual', headers: { cookie } });
    expect(page.status).toBe(302);
    expect(page.headers.get('location')).toContain(`${authority}/oauth2/v2.0/authorize?`);
    const api = await fetch(`${web.url}/api/tasks`, { headers: { cookie } });
    expect(api.status).toBe(401);
    expect(await api.text()).toBe(SIGN_IN_REQUIRED);
  });
});

describe('an unreachable provider', () => {
  it('pages answer 503 with a clear text, the API still 401, and the app serves on', async () => {
    const port = await freePort();
    const app = await startWebApp({ ...settings, AzureAd__Instance: `https://127.0.0.1:${port}/` });
    try {
      const page = await fetch(`${app.url}/`, { redirect: 'manual' });
      expect(page.status).toBe(503);
      expect(page.headers.get('content-type')).toBe(TEXT);
      expect(await page.text()).toBe(SIGN_IN_UNAVAILABLE);
      expect((await fetch(`${app.url}/api/tasks`)).status).toBe(401);
      expect(app.output()).toContain('sign-in: ');
      expect(app.running()).toBe(true);
    } finally {
      await app.stop();
    }
  });
});

describe('the sign-in callback', () => {
  /** Starts a sign-in as a browser would: the signed cookie and the state sent to the provider. */
  async function beginSignIn() {
    const response = await fetch(`${web.url}/`, { redirect: 'manual' });
    const state = new URL(response.headers.get('location') as string).searchParams.get('state') as string;
    return { cookie: cookiesOf(response).join('; '), state };
  }
  const callback = (query: Record<string, string>, cookie?: string) =>
    fetch(`${web.url}/signin-oidc?${new URLSearchParams(query)}`, {
      redirect: 'manual',
      headers: cookie ? { cookie } : {},
    });

  it('refuses a callback without its sign-in cookie, with another state, or with the provider error', async () => {
    const { cookie, state } = await beginSignIn();
    const other = (await beginSignIn()).state;
    const spent = (spentState: string) =>
      `taskstack.b.signin.${spentState}=; Path=/signin-oidc; Expires=Thu, 01 Jan 1970 00:00:00 GMT`;
    const cases: [Response, string[]][] = [
      // The one-time sign-in cookie the state names is spent either way; no other one.
      [await callback({ code: 'c', state }), [spent(state)]],
      [await callback({ code: 'c', state: other }, cookie), [spent(other)]],
      [await callback({ state }, cookie), [spent(state)]],
      [await callback({ error: 'access_denied', state }, cookie), [spent(state)]],
      // A state the app never makes names no cookie, even one that could not be a cookie's name.
      [await callback({ code: 'c', state: 'a state; Path=/' }, cookie), []],
      [await callback({ code: 'c' }, cookie), []],
    ];
    for (const [response, cleared] of cases) {
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toBe(TEXT);
      expect(await response.text()).toBe(SIGN_IN_FAILED);
      expect(response.headers.getSetCookie()).toEqual(cleared);
    }
    expect(web.output()).toContain('sign-in refused by the provider: access_denied');
  });

  it('refuses a code the provider does not redeem, and serves on', async () => {
    const { cookie, state } = await beginSignIn();
    const response = await callback({ code: 'not-a-code', state }, cookie);
    expect(response.status).toBe(400);
    expect(await response.text()).toBe(SIGN_IN_FAILED);
    expect(web.output()).toContain('sign-in failed:');
    expect(web.running()).toBe(true);
  });

  it('a provider that cannot be reached when the code is redeemed: 503 with a clear text, and the app serves on', async () => {
    const { cookie, state } = await beginSignIn();
    await stack.stopComponent('identity');
    try {
      const response = await callback({ code: 'a code', state }, cookie);
      expect(response.status).toBe(503);
      expect(response.headers.get('content-type')).toBe(TEXT);
      expect(await response.text()).toBe(SIGN_IN_UNAVAILABLE);
      expect(web.output()).toContain('sign-in: network_error: ');
    } finally {
      await stack.startComponent('identity');
    }
    expect((await fetch(`${web.url}/`, { redirect: 'manual' })).status).toBe(302);
  });

  it('logs no secret', () => {
    for (const secret of [CLIENT_SECRET, SESSION_SECRET, settings.IDENTITY_HEADER as string])
      expect(web.output()).not.toContain(secret);
  });
});
