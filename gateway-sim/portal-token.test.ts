/**
 * The portal's Try it carries a token the gateway itself accepts: with the opt-in validate-entra-token
 * fragment on TaskManagerFunctionsAPI, a call with the key alone is refused, and the portal's call — the
 * signed-in user's access token for the EntraID server's default scope — reaches the backend.
 * Identity provider and gateway run in this process; the gateway's port is chosen first, because the
 * portal's redirect URI registered at the provider names it. Also: a provider that cannot be reached, a session past its lifetime,
 * HEAD on the portal's pages.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { EmulatorContext, RunningEmulator } from '../emulators/core/emulator.ts';
import { startEmulator, testContext, testDataDir } from '../emulators/core/testing.ts';
import { FormClient } from '../emulators/identity/form-client.ts';
import identity from '../emulators/identity/index.ts';
import { assignPorts } from '../emulators/stack/ports.ts';
import { PORTAL_PATH, PROVIDER_UNAVAILABLE, SIGN_IN_REQUIRED } from './portal.ts';
import { editArtifact, startBackend, startGateway, type TestGateway } from './testing.ts';

const data = testDataDir();
let context: EmulatorContext;
let provider: RunningEmulator;
let backend: Awaited<ReturnType<typeof startBackend>>;
let gw: TestGateway;

beforeAll(async () => {
  context = await testContext(data.dir, { inMemory: true });
  const { gateway: port } = await assignPorts({ gateway: 0 }, 'free');
  const portal = `https://127.0.0.1:${port}${PORTAL_PATH}`;
  provider = await startEmulator(
    identity,
    { port: 0, redirectUris: { developerPortal: [`${portal}/signin-aad`] } },
    context,
  );
  backend = await startBackend();
  const { taskApi, developerPortal } = context.secrets.directory.applications;
  if (!taskApi || !developerPortal) throw new Error('no taskApi or developerPortal registration');
  const authority = provider.endpoints.authority as string;
  gw = await startGateway({
    functionApp: backend.url,
    webApp: backend.url,
    context,
    port,
    namedValues: {
      AuthUrl: authority,
      EntraClientId: taskApi.clientId,
      EntraClientSecret: taskApi.clientSecret,
    },
    portal: {
      authority: `${authority}/${context.secrets.tenantId}`,
      clientId: developerPortal.clientId,
      clientSecret: developerPortal.clientSecret,
    },
    prepare: (dir) =>
      editArtifact(dir, 'policies/apis/task-manager-functions-api.xml', (text) =>
        text.replace('<base />', '<base />\n    <include-fragment fragment-id="validate-entra-token" />'),
      ),
  });
});
afterAll(async () => {
  await gw?.stop();
  await provider?.stop();
  await backend?.close();
  data.remove();
});

/** Alice signs in to the portal through the provider's form. */
async function signIn() {
  const browser = new FormClient();
  const loginPage = await browser.follow(`${gw.url}${PORTAL_PATH}/signin`);
  const alice = { ...context.topology.directory.users.alice, ...context.secrets.directory.users.alice };
  const answer = await browser.signIn(loginPage, alice.userPrincipalName ?? '', alice.password ?? '');
  const page = await browser.follow(answer.location ?? '', provider.endpoints.authority as string);
  return { browser, page, alice };
}

it("Try it on managetask passes validate-jwt with the user's token for api://<taskApi>/user_impersonation", async () => {
  const key = (await gw.keys('task-manager-all-apis')).primaryKey;
  const keyOnly = await fetch(`${gw.url}/functions/managetask`, {
    method: 'POST',
    headers: { 'Ocp-Gateway-Subscription-Key': key },
    body: '{}',
  });
  expect(keyOnly.status).toBe(401);

  const { browser, page, alice } = await signIn();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  const tried = await browser.request(`${gw.url}${PORTAL_PATH}/try`, {
    form: { _csrf: csrf, operation: 'task-manager-functions-api/ManageTask', body: '{"Title":"t"}' },
  });
  expect(tried.body).toContain('<strong id="status">200</strong>');
  const sent = backend.seen.at(-1);
  expect(sent?.body.toString()).toBe('{"Title":"t"}');
  const token = String(sent?.headers.authorization).replace(/^Bearer /, '');
  expect(decodeJwt(token)).toMatchObject({
    aud: context.secrets.directory.applications.taskApi?.clientId,
    scp: 'user_impersonation',
    azp: context.secrets.directory.applications.developerPortal?.clientId,
    preferred_username: alice.userPrincipalName,
  });
  // The key reaches the backend too, as with APIM (no shipped policy removes it).
  expect(sent?.headers['ocp-gateway-subscription-key']).toBe(key);
});

it("Try it sends the key the user chose, primary or secondary, as the console of APIM's portal offers", async () => {
  const keys = await gw.keys('task-manager-all-apis');
  const { browser, page } = await signIn();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  expect(page.body).toContain('<option value="secondary">Secondary key</option>');
  const form = { _csrf: csrf, operation: 'task-manager-web-api/get-tasks' };
  for (const [slot, key] of [
    ['primary', keys.primaryKey],
    ['secondary', keys.secondaryKey],
  ] as const) {
    const tried = await browser.request(`${gw.url}${PORTAL_PATH}/try`, { form: { ...form, key: slot } });
    expect(tried.body).toContain(`Ocp-Gateway-Subscription-Key: (your ${slot} key)`);
    expect(backend.seen.at(-1)?.headers['ocp-gateway-subscription-key']).toBe(key);
    // The console keeps the choice for the next call.
    expect(tried.body).toContain(`<option value="${slot}" selected>`);
  }
  const sent = backend.seen.length;
  const other = await browser.request(`${gw.url}${PORTAL_PATH}/try`, { form: { ...form, key: 'tertiary' } });
  expect(other.status).toBe(400);
  expect(other.body).toContain('<p role="alert">Choose the primary or the secondary key.</p>');
  expect(backend.seen.length).toBe(sent);
});

it('answers 502 with a clear page when the identity provider cannot be reached, and keeps serving', async () => {
  const down = await startGateway({
    functionApp: backend.url,
    webApp: backend.url,
    portal: { authority: 'https://127.0.0.1:1/tenant', clientId: 'portal', clientSecret: 'not-a-secret' },
  });
  try {
    const signIn = await fetch(`${down.url}${PORTAL_PATH}/signin`, { redirect: 'manual' });
    expect(signIn.status).toBe(502);
    expect(await signIn.text()).toContain(`<p role="alert">${PROVIDER_UNAVAILABLE}</p>`);
    expect(down.logs.some((line) => line.startsWith('portal: GET /developer/signin failed'))).toBe(true);
    expect((await fetch(`${down.url}${PORTAL_PATH}/`)).status).toBe(200);
  } finally {
    await down.stop();
  }
});

it('a session ends after 8 hours even if its cookie is kept', async () => {
  const { browser, page } = await signIn();
  expect(page.body).toContain('id="primary-key"');
  const now = Date.now();
  const later = vi.spyOn(Date, 'now').mockReturnValue(now + 8 * 3600 * 1000 + 1);
  try {
    const after = await browser.request(`${gw.url}${PORTAL_PATH}/`);
    expect(after.body).toContain('id="sign-in"');
    expect(after.body).not.toContain('id="primary-key"');
  } finally {
    later.mockRestore();
  }
});

it('a refresh token the provider no longer honours ends the session: Try it asks to sign in again', async () => {
  const { browser, page } = await signIn();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  // The provider restarts with an empty memory: the grant behind the user's refresh token is gone.
  const authority = new URL(provider.endpoints.authority as string);
  await provider.stop();
  provider = await startEmulator(
    identity,
    {
      port: Number(authority.port),
      redirectUris: { developerPortal: [`${gw.url}${PORTAL_PATH}/signin-aad`] },
    },
    context,
  );
  // Two hours on: the access token has expired (one hour), the session (eight) has not. MSAL reads the
  // time through `new Date()`, so the whole Date is moved, timers left alone.
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Date.now() + 2 * 3600 * 1000);
  try {
    const tried = await browser.request(`${gw.url}${PORTAL_PATH}/try`, {
      form: { _csrf: csrf, operation: 'task-manager-functions-api/ManageTask', body: '{"Title":"t"}' },
    });
    expect(tried.status).toBe(401);
    expect(tried.body).toContain(`<p role="alert">${SIGN_IN_REQUIRED}</p>`);
    expect((await browser.request(`${gw.url}${PORTAL_PATH}/`)).body).toContain('id="sign-in"');
  } finally {
    vi.useRealTimers();
  }
});

it("Sign out on a page whose session has expired still ends the provider's session", async () => {
  const { browser, page } = await signIn();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  // The tab was left open past the session's eight hours: the provider's own session may still be on.
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Date.now() + 8 * 3600 * 1000 + 1000);
  try {
    const out = await browser.request(`${gw.url}${PORTAL_PATH}/signout`, { form: { _csrf: csrf } });
    expect(out.status).toBe(303);
    const logout = new URL(out.location ?? '');
    expect(`${logout.origin}${logout.pathname}`).toBe(
      `${provider.endpoints.authority}/${context.secrets.tenantId}/oauth2/v2.0/logout`,
    );
    expect(logout.searchParams.get('post_logout_redirect_uri')).toBe(`${gw.url}${PORTAL_PATH}/`);
    expect(browser.cookies.has('portal.session')).toBe(false);
  } finally {
    vi.useRealTimers();
  }
});

it('HEAD on the portal answers as GET, without a body', async () => {
  for (const path of [`${PORTAL_PATH}/`, PORTAL_PATH]) {
    const get = await fetch(`${gw.url}${path}`, { redirect: 'manual' });
    await get.body?.cancel();
    const head = await fetch(`${gw.url}${path}`, { method: 'HEAD', redirect: 'manual' });
    expect(head.status).toBe(get.status);
    for (const name of ['content-type', 'content-security-policy', 'location'])
      expect(head.headers.get(name)).toBe(get.headers.get(name));
    expect(await head.text()).toBe('');
  }
});
