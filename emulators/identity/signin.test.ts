import { type AuthenticationResult, ConfidentialClientApplication, CryptoProvider } from '@azure/msal-node';
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../core/emulator.ts';
import { loadSecrets } from '../core/secrets.ts';
import { startEmulator, type TestContext, testContext, testDataDir } from '../core/testing.ts';
import { FormClient, type Hop } from './form-client.ts';
import identity from './index.ts';
import { WRONG_CREDENTIALS } from './login.ts';
import { GRAPH_APP_ID } from './resources.ts';
import { createTokenVerifier } from './verify.ts';

// The redirect URIs are never served: the test reads the code from the provider's redirect.
const WEB = 'http://127.0.0.1:1';
const REDIRECT_URI = `${WEB}/signin-oidc`;
const SCOPES = ['User.Read'];

const data = testDataDir();
let context: TestContext;
let running: RunningEmulator;
let tenantId: string;

const app = (name: 'taskWeb' | 'taskApi' | 'developerPortal') => {
  const secrets = context.secrets.directory.applications[name];
  if (!secrets) throw new Error(`no application ${name}`);
  return secrets;
};
const user = (name: 'alice' | 'bob') => {
  const secrets = context.secrets.directory.users[name];
  const declared = context.topology.directory.users[name];
  if (!secrets || !declared) throw new Error(`no user ${name}`);
  return { ...declared, ...secrets };
};

/** msal-node as an app configures it for this provider: the host as a known authority. */
function msalFor(name: 'taskWeb' | 'taskApi', clientSecret = app(name).clientSecret) {
  const { authority } = running.endpoints;
  return new ConfidentialClientApplication({
    auth: {
      clientId: app(name).clientId,
      clientSecret,
      authority: `${authority}/${tenantId}`,
      knownAuthorities: [new URL(authority as string).host],
    },
  });
}

/** Up to the code at the redirect URI: authorize → sign-in page → credentials → redirect. */
async function codeFor(msal: ConfidentialClientApplication, scopes = SCOPES) {
  const browser = new FormClient();
  const who = user('alice');
  const { verifier, challenge } = await new CryptoProvider().generatePkceCodes();
  const url = await msal.getAuthCodeUrl({
    scopes,
    redirectUri: REDIRECT_URI,
    codeChallenge: challenge,
    codeChallengeMethod: 'S256',
    state: 'state-1',
  });
  const page = await browser.follow(url);
  expect(page.status).toBe(200);
  const signedIn = await browser.signIn(page, who.userPrincipalName, who.password);
  const back = await browser.follow(signedIn.location ?? '', REDIRECT_URI);
  const redirect = new URL(back.location ?? '');
  expect(redirect.origin + redirect.pathname).toBe(REDIRECT_URI);
  expect(redirect.searchParams.get('state')).toBe('state-1');
  return { code: redirect.searchParams.get('code') ?? '', verifier, browser };
}

const redeem = (msal: ConfidentialClientApplication, code: string, codeVerifier: string, scopes = SCOPES) =>
  msal.acquireTokenByCode({ code, codeVerifier, scopes, redirectUri: REDIRECT_URI });

const me = (token: string) =>
  fetch(`${running.endpoints.graph}/me`, { headers: { authorization: `Bearer ${token}` } });

const tokenRequest = (form: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(running.endpoints.token as string, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });

/** Entra's error JSON: the code leads the description, the trace lines follow. */
async function expectEntraError(response: Response, status: number, error: string, code: number) {
  expect(response.status).toBe(status);
  const body = await response.json();
  expect(body).toMatchObject({
    error,
    error_codes: [code],
    trace_id: expect.any(String),
    correlation_id: expect.any(String),
  });
  expect(body.error_description).toMatch(new RegExp(`^AADSTS${code}: `));
  return body.error_description as string;
}

beforeAll(async () => {
  context = await testContext(data.dir, { inMemory: true });
  tenantId = context.secrets.tenantId;
  running = await startEmulator(
    identity,
    { port: 0, redirectUris: { taskWeb: [REDIRECT_URI] }, postLogoutRedirectUris: { taskWeb: [`${WEB}/`] } },
    context,
  );
});
afterAll(async () => {
  await running?.stop();
  data.remove();
});

describe('sign-in with msal-node', () => {
  let result: AuthenticationResult;

  it('publishes Entra-shaped endpoints in its discovery document and reports them', async () => {
    const { authority, issuer } = running.endpoints;
    const tenantUrl = `${authority}/${tenantId}`;
    expect(running.endpoints).toMatchObject({
      authorize: `${tenantUrl}/oauth2/v2.0/authorize`,
      token: `${tenantUrl}/oauth2/v2.0/token`,
      logout: `${tenantUrl}/oauth2/v2.0/logout`,
      graph: `${authority}/v1.0`,
    });
    const config = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
    expect(config).toMatchObject({
      issuer,
      authorization_endpoint: running.endpoints.authorize,
      token_endpoint: running.endpoints.token,
      end_session_endpoint: running.endpoints.logout,
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    });
  });

  it('signs a test user in: code with PKCE, ID token claims as Entra v2 issues them', async () => {
    const msal = msalFor('taskWeb');
    // Entra puts `email` into the ID token only when the app asks for the email scope.
    const scopes = [...SCOPES, 'email'];
    const { code, verifier } = await codeFor(msal, scopes);
    result = await redeem(msal, code, verifier, scopes);
    const alice = user('alice');
    expect(result.idTokenClaims).toMatchObject({
      aud: app('taskWeb').clientId,
      iss: running.endpoints.issuer,
      tid: tenantId,
      oid: alice.objectId,
      sub: alice.objectId,
      name: alice.displayName,
      preferred_username: alice.userPrincipalName,
      email: alice.mail,
      ver: '2.0',
    });
    expect(result.account).toMatchObject({
      homeAccountId: `${alice.objectId}.${tenantId}`,
      username: alice.userPrincipalName,
      name: alice.displayName,
    });
  });

  it('issues an access token for Graph that the key set verifies and /v1.0/me accepts', async () => {
    const alice = user('alice');
    const claims = decodeJwt(result.accessToken);
    expect(decodeProtectedHeader(result.accessToken)).toMatchObject({
      kid: context.secrets.signingKey.kid,
      typ: 'JWT',
    });
    expect(claims).toMatchObject({
      aud: GRAPH_APP_ID,
      iss: running.endpoints.issuer,
      scp: 'User.Read',
      oid: alice.objectId,
      tid: tenantId,
      azp: app('taskWeb').clientId,
      name: alice.displayName,
      preferred_username: alice.userPrincipalName,
      ver: '2.0',
    });
    const verifier = createTokenVerifier({
      issuer: running.endpoints.issuer as string,
      jwksUri: running.endpoints.jwksUri as string,
    });
    expect(await verifier.verify(result.accessToken, [GRAPH_APP_ID])).toMatchObject({
      principalId: alice.objectId,
    });
    const profile = await me(result.accessToken);
    expect(profile.status).toBe(200);
    expect(await profile.json()).toMatchObject({
      id: alice.objectId,
      displayName: alice.displayName,
      mail: alice.mail,
      userPrincipalName: alice.userPrincipalName,
    });
  });

  it('refreshes the tokens with the refresh token', async () => {
    const msal = msalFor('taskWeb');
    const { code, verifier } = await codeFor(msal);
    const first = await redeem(msal, code, verifier);
    const account = first.account;
    if (!account) throw new Error('no account');
    const refreshed = await msal.acquireTokenSilent({ account, scopes: SCOPES, forceRefresh: true });
    expect(refreshed.accessToken).not.toBe(first.accessToken);
    expect(decodeJwt(refreshed.accessToken)).toMatchObject({ aud: GRAPH_APP_ID, scp: 'User.Read' });
    expect((await me(refreshed.accessToken)).status).toBe(200);
  });

  it('redeems the refresh token for another resource the app may use, as Entra (bound to user and client)', async () => {
    // Signed in for Graph only, the app asks for the API app's scope: msal-node has no token for it
    // and redeems its refresh token (learn.microsoft.com/entra/identity-platform/refresh-tokens).
    const msal = msalFor('taskWeb');
    const { code, verifier } = await codeFor(msal);
    const first = await redeem(msal, code, verifier);
    const account = first.account;
    if (!account) throw new Error('no account');
    const api = app('taskApi');
    const scope = `api://${api.clientId}/user_impersonation`;
    const forApi = await msal.acquireTokenSilent({ account, scopes: [scope] });
    expect(decodeJwt(forApi.accessToken)).toMatchObject({
      aud: api.clientId,
      scp: 'user_impersonation',
      oid: user('alice').objectId,
      azp: app('taskWeb').clientId,
    });
    expect(forApi.scopes).toEqual([scope]);
    // And back to Graph with the refresh token it has now.
    const graph = await msal.acquireTokenSilent({ account, scopes: SCOPES, forceRefresh: true });
    expect(decodeJwt(graph.accessToken)).toMatchObject({ aud: GRAPH_APP_ID, scp: 'User.Read' });
    // A permission the API does not expose is still refused.
    await expect(
      msal.acquireTokenSilent({ account, scopes: [`api://${api.clientId}/Tasks.Delete`] }),
    ).rejects.toMatchObject({
      errorCode: 'invalid_scope',
      errorMessage: expect.stringMatching(/AADSTS70011: /),
    });
  });

  it('answers every refresh with a new refresh token and keeps the old one valid, as Entra', async () => {
    const msal = msalFor('taskWeb');
    const { code, verifier } = await codeFor(msal);
    const web = app('taskWeb');
    const client = { client_id: web.clientId, client_secret: web.clientSecret };
    const redeemed = await tokenRequest({
      ...client,
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
      scope: 'openid profile offline_access User.Read',
    });
    expect(redeemed.status).toBe(200);
    const original = (await redeemed.json()).refresh_token as string;
    const refresh = async (refreshToken: string) => {
      const response = await tokenRequest({
        ...client,
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        scope: 'openid profile offline_access User.Read',
      });
      expect(response.status).toBe(200);
      return (await response.json()) as { refresh_token?: string; access_token: string };
    };
    const once = await refresh(original);
    expect(once.refresh_token).toEqual(expect.any(String));
    expect(once.refresh_token).not.toBe(original);
    // Entra does not revoke the old refresh token when it is used; both keep working.
    const again = await refresh(original);
    expect(again.refresh_token).not.toBe(original);
    const fromNew = await refresh(once.refresh_token ?? '');
    expect(decodeJwt(fromNew.access_token)).toMatchObject({ aud: GRAPH_APP_ID, scp: 'User.Read' });
  });

  it('issues client-credential tokens for the API app, by form fields and by Basic header', async () => {
    const api = app('taskApi');
    const scope = `api://${api.clientId}/.default`;
    const own = await msalFor('taskApi').acquireTokenByClientCredential({ scopes: [scope] });
    expect(decodeJwt(own?.accessToken ?? '')).toMatchObject({
      aud: api.clientId,
      oid: api.principalId,
      sub: api.principalId,
      azp: api.clientId,
      tid: tenantId,
      idtyp: 'app',
    });
    const web = app('taskWeb');
    const basic = Buffer.from(`${web.clientId}:${web.clientSecret}`).toString('base64');
    const response = await tokenRequest(
      { grant_type: 'client_credentials', scope },
      { authorization: `Basic ${basic}` },
    );
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: expect.any(Number) });
    expect(decodeJwt(body.access_token)).toMatchObject({
      aud: api.clientId,
      oid: web.principalId,
      idtyp: 'app',
    });
  });
});

describe('refusals', () => {
  it('refuses an unregistered redirect URI with Entra AADSTS50011 page and no redirect', async () => {
    const url = await msalFor('taskWeb').getAuthCodeUrl({
      scopes: SCOPES,
      redirectUri: 'http://127.0.0.1:1/elsewhere',
    });
    const page = await new FormClient().request(url);
    expect(page.status).toBe(400);
    expect(page.location).toBeUndefined();
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.body).toContain(
      `AADSTS50011: The redirect URI &#39;http://127.0.0.1:1/elsewhere&#39; specified in the request does not match the redirect URIs configured for the application &#39;${app('taskWeb').clientId}&#39;.`,
    );
  });

  it('an application without redirect URIs signs nobody in', async () => {
    const portal = app('developerPortal');
    const url = new URL(running.endpoints.authorize as string);
    url.search = new URLSearchParams({
      client_id: portal.clientId,
      response_type: 'code',
      redirect_uri: 'https://127.0.0.1:1/signin-aad',
      scope: 'openid',
    }).toString();
    const page = await new FormClient().request(url.href);
    expect(page.status).toBe(400);
    expect(page.location).toBeUndefined();
  });

  it('refuses an unknown client and a missing client id on the authorize page', async () => {
    const url = new URL(running.endpoints.authorize as string);
    url.search = new URLSearchParams({
      client_id: '22222222-2222-2222-2222-222222222222',
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      scope: 'openid',
    }).toString();
    const unknown = await new FormClient().request(url.href);
    expect(unknown.status).toBe(400);
    expect(unknown.location).toBeUndefined();
    expect(unknown.body).toContain(
      `AADSTS700016: Application with identifier &#39;22222222-2222-2222-2222-222222222222&#39; was not found in the directory &#39;${tenantId}&#39;.`,
    );
    url.searchParams.delete('client_id');
    const missing = await new FormClient().request(url.href);
    expect(missing.status).toBe(400);
    expect(missing.body).toContain(
      'AADSTS900144: The request body must contain the following parameter: &#39;client_id&#39;.',
    );
  });

  it('answers a scope of an unknown resource with AADSTS500011, at the app and at the token endpoint', async () => {
    const unknown = 'api://33333333-3333-3333-3333-333333333333';
    const msal = msalFor('taskWeb');
    const browser = new FormClient();
    const url = await msal.getAuthCodeUrl({
      scopes: [`${unknown}/user_impersonation`],
      redirectUri: REDIRECT_URI,
    });
    const back = await browser.follow(url, REDIRECT_URI);
    const answer = new URL(back.location ?? '').searchParams;
    expect(answer.get('error')).toBe('invalid_resource');
    expect(answer.get('error_description')).toMatch(
      new RegExp(
        `^AADSTS500011: The resource principal named ${unknown} was not found in the tenant named ${tenantId}\\.`,
      ),
    );
    const web = app('taskWeb');
    const refused = await tokenRequest({
      grant_type: 'client_credentials',
      client_id: web.clientId,
      client_secret: web.clientSecret,
      scope: `${unknown}/.default`,
    });
    expect(await expectEntraError(refused, 400, 'invalid_resource', 500011)).toContain(
      `named ${unknown} was not found`,
    );
  });

  it('client credentials: a scope without /.default is AADSTS1002012, no scope AADSTS900144, as at Entra', async () => {
    const web = app('taskWeb');
    const api = app('taskApi');
    const credentials = {
      grant_type: 'client_credentials',
      client_id: web.clientId,
      client_secret: web.clientSecret,
    };
    for (const scope of ['User.Read', `api://${api.clientId}/user_impersonation`]) {
      const description = await expectEntraError(
        await tokenRequest({ ...credentials, scope }),
        400,
        'invalid_scope',
        1002012,
      );
      expect(description).toContain(
        `The provided value for scope ${scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).`,
      );
    }
    expect(await expectEntraError(await tokenRequest(credentials), 400, 'invalid_request', 900144)).toContain(
      "The request body must contain the following parameter: 'scope'.",
    );
    // MSAL, as a developer's daemon calls it, sees the same refusal.
    await expect(
      msalFor('taskWeb').acquireTokenByClientCredential({ scopes: ['User.Read'] }),
    ).rejects.toMatchObject({
      errorCode: 'invalid_scope',
      errorMessage: expect.stringMatching(/AADSTS1002012/),
    });
  });

  it("refuses v1.0's resource parameter at the v2.0 endpoints with AADSTS901002", async () => {
    const web = app('taskWeb');
    const api = app('taskApi');
    const refused = await tokenRequest({
      grant_type: 'client_credentials',
      client_id: web.clientId,
      client_secret: web.clientSecret,
      resource: `api://${api.clientId}`,
    });
    expect(await expectEntraError(refused, 400, 'invalid_request', 901002)).toContain(
      "The 'resource' request parameter is not supported.",
    );
    const url = new URL(
      await msalFor('taskWeb').getAuthCodeUrl({ scopes: SCOPES, redirectUri: REDIRECT_URI }),
    );
    url.searchParams.set('resource', `api://${api.clientId}`);
    const page = await new FormClient().request(url.href);
    expect(page.status).toBe(400);
    expect(page.location).toBeUndefined();
    expect(page.body).toContain('AADSTS901002: The &#39;resource&#39; request parameter is not supported.');
  });

  it('prompt=none without a session goes back to the app with login_required, AADSTS50058', async () => {
    const url = await msalFor('taskWeb').getAuthCodeUrl({
      scopes: SCOPES,
      redirectUri: REDIRECT_URI,
      prompt: 'none',
    });
    const back = await new FormClient().follow(url, REDIRECT_URI);
    const answer = new URL(back.location ?? '').searchParams;
    expect(answer.get('error')).toBe('login_required');
    expect(answer.get('error_description')).toMatch(
      /^AADSTS50058: A silent sign-in request was sent but no user is signed in\. Trace ID: /,
    );
  });

  it('refuses a wrong client secret with AADSTS7000215', async () => {
    const msal = msalFor('taskWeb');
    const { code, verifier } = await codeFor(msal);
    await expect(redeem(msalFor('taskWeb', 'not-the-secret'), code, verifier)).rejects.toMatchObject({
      errorCode: 'invalid_client',
      errorMessage: expect.stringMatching(/Description: AADSTS7000215: Invalid client secret provided\./),
    });
    const web = app('taskWeb');
    await expectEntraError(
      await tokenRequest({
        grant_type: 'client_credentials',
        client_id: web.clientId,
        client_secret: 'wrong',
        scope: 'https://graph.microsoft.com/.default',
      }),
      401,
      'invalid_client',
      7000215,
    );
  });

  it('refuses a wrong PKCE verifier with AADSTS501481', async () => {
    const msal = msalFor('taskWeb');
    const { code } = await codeFor(msal);
    const other = await new CryptoProvider().generatePkceCodes();
    const web = app('taskWeb');
    const form = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: web.clientId,
      client_secret: web.clientSecret,
    };
    await expectEntraError(
      await tokenRequest({ ...form, code_verifier: other.verifier }),
      400,
      'invalid_grant',
      501481,
    );
    await expect(redeem(msal, code, other.verifier)).rejects.toMatchObject({
      errorCode: 'invalid_grant',
      errorMessage: expect.stringMatching(/Description: AADSTS501481: The Code_Verifier does not match/),
    });
  });

  it('refuses a code redeemed twice with AADSTS54005, and the first redemption keeps working', async () => {
    const msal = msalFor('taskWeb');
    const { code, verifier } = await codeFor(msal);
    const first = await redeem(msal, code, verifier);
    await expect(redeem(msal, code, verifier)).rejects.toMatchObject({
      errorCode: 'invalid_grant',
      errorMessage: expect.stringMatching(
        /Description: AADSTS54005: OAuth2 Authorization code was already redeemed/,
      ),
    });
    // Entra refuses the second redemption only: the first one's refresh token still works.
    const account = first.account;
    if (!account) throw new Error('no account');
    const refreshed = await msal.acquireTokenSilent({ account, scopes: SCOPES, forceRefresh: true });
    expect(decodeJwt(refreshed.accessToken)).toMatchObject({ aud: GRAPH_APP_ID, scp: 'User.Read' });
    // The same answer on the wire, with its status.
    const second = await codeFor(msal);
    await redeem(msal, second.code, second.verifier);
    const web = app('taskWeb');
    const again = await tokenRequest({
      grant_type: 'authorization_code',
      code: second.code,
      code_verifier: second.verifier,
      redirect_uri: REDIRECT_URI,
      client_id: web.clientId,
      client_secret: web.clientSecret,
    });
    await expectEntraError(again, 400, 'invalid_grant', 54005);
  });

  it('refuses a code redeemed without its redirect URI (AADSTS900144) or with another (AADSTS500112)', async () => {
    const msal = msalFor('taskWeb');
    const { code, verifier } = await codeFor(msal);
    const web = app('taskWeb');
    const form = {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: web.clientId,
      client_secret: web.clientSecret,
      scope: 'openid User.Read',
    };
    expect(await expectEntraError(await tokenRequest(form), 400, 'invalid_request', 900144)).toContain(
      "The request body must contain the following parameter: 'redirect_uri'.",
    );
    await expectEntraError(
      await tokenRequest({ ...form, redirect_uri: `${WEB}/elsewhere` }),
      400,
      'invalid_grant',
      500112,
    );
  });

  it('refuses an unknown client with AADSTS700016', async () => {
    const text = await expectEntraError(
      await tokenRequest({
        grant_type: 'client_credentials',
        client_id: '11111111-1111-1111-1111-111111111111',
        client_secret: 'x',
        scope: 'https://graph.microsoft.com/.default',
      }),
      400,
      'unauthorized_client',
      700016,
    );
    expect(text).toContain(
      `Application with identifier '11111111-1111-1111-1111-111111111111' was not found in the directory '${tenantId}'.`,
    );
  });

  it('shows the sign-in page again, escaped, with a message on a wrong password', async () => {
    const msal = msalFor('taskWeb');
    const browser = new FormClient();
    const url = await msal.getAuthCodeUrl({ scopes: SCOPES, redirectUri: REDIRECT_URI });
    const page = await browser.follow(url);
    const wrong = await browser.signIn(page, '<script>alert(1)</script>', 'nope');
    expect(wrong.status).toBe(200);
    expect(wrong.location).toBeUndefined();
    expect(wrong.body).toContain(WRONG_CREDENTIALS.replaceAll("'", '&#39;'));
    expect(wrong.body).toContain('value="&#60;script&#62;alert(1)&#60;/script&#62;"');
    expect(wrong.body).not.toContain('<script>');
    const again = await browser.signIn(page, user('alice').userPrincipalName, `${user('alice').password}x`);
    expect(again.body).toContain(WRONG_CREDENTIALS.replaceAll("'", '&#39;'));
    const right = await browser.signIn(
      page,
      user('alice').userPrincipalName.toUpperCase(),
      user('alice').password,
    );
    expect(right.status).toBe(303);
  });

  it('refuses a sign-in form posted without the interaction cookie (another site)', async () => {
    const browser = new FormClient();
    const url = await msalFor('taskWeb').getAuthCodeUrl({ scopes: SCOPES, redirectUri: REDIRECT_URI });
    const page = await browser.follow(url);
    const forged = new FormClient();
    const answer = await forged.signIn(page, user('bob').userPrincipalName, user('bob').password);
    expect(answer.status).toBe(400);
    expect(answer.location).toBeUndefined();
  });

  it('/v1.0/me refuses no token, a token signed by another key and an app token', async () => {
    const missing = await fetch(`${running.endpoints.graph}/me`);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({
      error: { code: 'InvalidAuthenticationToken', message: 'Access token is empty.' },
    });

    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({
      oid: user('alice').objectId,
      tid: tenantId,
      azp: app('taskWeb').clientId,
      scp: 'User.Read',
    })
      .setProtectedHeader({ alg: 'RS256', kid: context.secrets.signingKey.kid })
      .setIssuer(running.endpoints.issuer as string)
      .setAudience(GRAPH_APP_ID)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
    const refused = await me(forged);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({
      error: { code: 'InvalidAuthenticationToken', message: 'Access token validation failure.' },
    });

    const appToken = await msalFor('taskApi').acquireTokenByClientCredential({
      scopes: ['https://graph.microsoft.com/.default'],
    });
    const appOnly = await me(appToken?.accessToken ?? '');
    expect(appOnly.status).toBe(400);
    expect((await appOnly.json()).error.message).toBe(
      '/me request is only valid with delegated authentication flow.',
    );
  });
});

describe('sign-out', () => {
  const confirm = (browser: FormClient, page: Hop) => {
    const action = /<form id="op.logoutForm" method="post" action="([^"]+)"/.exec(page.body)?.[1];
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)?.[1];
    if (!action || !xsrf) throw new Error(`no sign-out form: ${page.body}`);
    return browser.request(new URL(action, page.url).href, { form: { xsrf, logout: 'yes' } });
  };

  it('ends the provider session and returns to the registered post-logout URI', async () => {
    const msal = msalFor('taskWeb');
    const { browser } = await codeFor(msal);
    // Signed in: a second authorize goes straight back to the app.
    const url = await msal.getAuthCodeUrl({ scopes: SCOPES, redirectUri: REDIRECT_URI });
    expect((await browser.follow(url, REDIRECT_URI)).location).toMatch(
      /^http:\/\/127\.0\.0\.1:1\/signin-oidc\?code=/,
    );

    const logout = new URL(running.endpoints.logout as string);
    logout.search = new URLSearchParams({
      post_logout_redirect_uri: `${WEB}/`,
      client_id: app('taskWeb').clientId,
    }).toString();
    const page = await browser.request(logout.href);
    expect(page.status).toBe(200);
    const done = await confirm(browser, page);
    expect(done.location).toBe(`${WEB}/`);
    // Signed out: authorize asks for credentials again.
    const next = await browser.follow(url, REDIRECT_URI);
    expect(next.status).toBe(200);
    expect(next.body).toContain('name="password"');
  });

  it('refuses an unregistered post-logout URI', async () => {
    const logout = new URL(running.endpoints.logout as string);
    logout.search = new URLSearchParams({
      post_logout_redirect_uri: 'http://127.0.0.1:1/evil',
      client_id: app('taskWeb').clientId,
    }).toString();
    const page = await new FormClient().request(logout.href);
    expect(page.status).toBe(400);
    expect(page.location).toBeUndefined();
    expect(page.body).toContain('AADSTS50011');
  });
});

describe('test users', () => {
  it('lists each test user with the password generated for this data directory', async () => {
    const users = (await running.actions?.testUsers?.(undefined)) as {
      userPrincipalName: string;
      password: string;
    }[];
    expect(users).toContainEqual(
      expect.objectContaining({
        userPrincipalName: user('alice').userPrincipalName,
        password: user('alice').password,
      }),
    );
    expect(users).toHaveLength(Object.keys(context.topology.directory.users).length);
  });

  it('keeps the credentials generated for a data directory; another directory gets its own', async () => {
    expect((await loadSecrets(data.dir, context.topology)).directory).toEqual(context.secrets.directory);
    const other = testDataDir();
    try {
      const elsewhere = (await loadSecrets(other.dir, context.topology)).directory;
      expect(elsewhere.users.alice?.password).not.toBe(user('alice').password);
      expect(elsewhere.applications.taskWeb?.clientSecret).not.toBe(app('taskWeb').clientSecret);
      expect(Object.keys(elsewhere.applications)).toEqual(
        Object.keys(context.topology.directory.applications),
      );
    } finally {
      other.remove();
    }
  });

  it('refuses to start with redirect URIs for an application the topology lacks', async () => {
    await expect(
      startEmulator(identity, { port: 0, redirectUris: { nobody: ['https://127.0.0.1:1/'] } }, context),
    ).rejects.toThrow(/redirectUris names nobody, which is not an application/);
  });
});

describe('bad input', () => {
  it('accepts a confidential client without PKCE, as Entra does', async () => {
    const msal = msalFor('taskWeb');
    const browser = new FormClient();
    const page = await browser.follow(
      await msal.getAuthCodeUrl({ scopes: SCOPES, redirectUri: REDIRECT_URI }),
    );
    const alice = user('alice');
    const signedIn = await browser.signIn(page, alice.userPrincipalName, alice.password);
    const back = await browser.follow(signedIn.location ?? '', REDIRECT_URI);
    const code = new URL(back.location ?? '').searchParams.get('code') ?? '';
    const result = await msal.acquireTokenByCode({ code, scopes: SCOPES, redirectUri: REDIRECT_URI });
    expect(result.idTokenClaims).toMatchObject({ oid: alice.objectId });
  });

  it('asks no consent: prompt=consent signs in and returns to the app', async () => {
    const msal = msalFor('taskWeb');
    const browser = new FormClient();
    const url = await msal.getAuthCodeUrl({ scopes: SCOPES, redirectUri: REDIRECT_URI, prompt: 'consent' });
    const page = await browser.follow(url);
    const alice = user('alice');
    const signedIn = await browser.signIn(page, alice.userPrincipalName, alice.password);
    const back = await browser.follow(signedIn.location ?? '', REDIRECT_URI);
    expect(back.location).toMatch(/^http:\/\/127\.0\.0\.1:1\/signin-oidc\?code=/);
  });

  it('answers a missing grant type, an unknown one and a 10 MB body with clear errors and keeps serving', async () => {
    const web = app('taskWeb');
    const credentials = { client_id: web.clientId, client_secret: web.clientSecret };
    const missing = await expectEntraError(await tokenRequest(credentials), 400, 'invalid_request', 900144);
    expect(missing).toMatch(
      /^AADSTS900144: The request body must contain the following parameter: 'grant_type'\./,
    );
    await expectEntraError(
      await tokenRequest({ ...credentials, grant_type: 'password' }),
      400,
      'unsupported_grant_type',
      70003,
    );
    const huge = await tokenRequest({
      ...credentials,
      grant_type: 'client_credentials',
      scope: 'x'.repeat(10 * 1024 * 1024),
    });
    expect(huge.status).toBe(413);
    const notForm = await fetch(running.endpoints.token as string, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"grant_type": ',
    });
    expect(notForm.status).toBe(400);
    expect(await notForm.text()).not.toMatch(/ at .*\.js/);
    await running.health();
  });
});
