import type { AuthenticationResult } from '@azure/msal-node';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { describe, expect, it, vi } from 'vitest';
import { loadSecrets } from '../core/secrets.ts';
import { startEmulator, testDataDir } from '../core/testing.ts';
import { FormClient, type Hop } from './form-client.ts';
import identity from './index.ts';
import { GRAPH_APP_ID } from './resources.ts';
import { GRAPH_SCP, REDIRECT_URI, SCOPES, useSignInProvider, WEB } from './signin-fixture.ts';
import { createTokenVerifier } from './verify.ts';

const provider = useSignInProvider();
const { app, user, msalFor, codeFor, redeem, me, tokenRequest, redeemByForm } = provider;

/** Alice signs taskWeb in; its refresh token, and a refresh as the app posts it. */
async function signInForRefresh() {
  const { code, verifier } = await codeFor(msalFor('taskWeb'));
  const web = app('taskWeb');
  const client = { client_id: web.clientId, client_secret: web.clientSecret };
  const scope = 'openid profile offline_access User.Read';
  const redeemed = await redeemByForm(code, verifier, scope);
  expect(redeemed.status).toBe(200);
  const refresh = (refreshToken: string) =>
    tokenRequest({ ...client, grant_type: 'refresh_token', refresh_token: refreshToken, scope });
  return { original: (await redeemed.json()).refresh_token as string, refresh };
}

describe('sign-in with msal-node', () => {
  let result: AuthenticationResult;

  it('publishes Entra-shaped endpoints in its discovery document and reports them', async () => {
    const { authority, issuer } = provider.running.endpoints;
    const tenantUrl = `${authority}/${provider.tenantId}`;
    expect(provider.running.endpoints).toMatchObject({
      authorize: `${tenantUrl}/oauth2/v2.0/authorize`,
      token: `${tenantUrl}/oauth2/v2.0/token`,
      logout: `${tenantUrl}/oauth2/v2.0/logout`,
      graph: `${authority}/v1.0`,
    });
    const config = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
    expect(config).toMatchObject({
      issuer,
      authorization_endpoint: provider.running.endpoints.authorize,
      token_endpoint: provider.running.endpoints.token,
      end_session_endpoint: provider.running.endpoints.logout,
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
      iss: provider.running.endpoints.issuer,
      tid: provider.tenantId,
      oid: alice.objectId,
      sub: alice.objectId,
      name: alice.displayName,
      preferred_username: alice.userPrincipalName,
      email: alice.mail,
      ver: '2.0',
    });
    expect(result.account).toMatchObject({
      homeAccountId: `${alice.objectId}.${provider.tenantId}`,
      username: alice.userPrincipalName,
      name: alice.displayName,
    });
  });

  it("carries the claims of Entra's v2 ID token: nbf, the session's sid (kept by a refresh), uti, rh, aio", async () => {
    const GUID = /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/;
    const msal = msalFor('taskWeb');
    const idTokenOf = async () => {
      const { code, verifier } = await codeFor(msal);
      const signedIn = await redeem(msal, code, verifier);
      return { claims: decodeJwt(signedIn.idToken), account: signedIn.account };
    };
    const first = await idTokenOf();
    expect(first.claims).toMatchObject({
      nbf: first.claims.iat,
      sid: expect.stringMatching(GUID),
      uti: expect.stringMatching(/^[\w-]{22}$/),
      rh: expect.stringMatching(/^0\.[\w-]+\.$/),
      aio: expect.stringMatching(/^[\w-]{20,}$/),
    });
    // A refresh's ID token is of the same session; another sign-in (another browser) is another session.
    if (!first.account) throw new Error('no account');
    const refreshed = await msal.acquireTokenSilent({
      account: first.account,
      scopes: SCOPES,
      forceRefresh: true,
    });
    const again = decodeJwt(refreshed.idToken);
    expect(again.sid).toBe(first.claims.sid);
    expect(again.uti).not.toBe(first.claims.uti);
    expect((await idTokenOf()).claims.sid).not.toBe(first.claims.sid);
  });

  it("fills the sign-in page's user name from login_hint, as Entra does (escaped)", async () => {
    const msal = msalFor('taskWeb');
    for (const [hint, shown] of [
      [user('alice').userPrincipalName, user('alice').userPrincipalName],
      ['"><b>x', '&#34;&#62;&#60;b&#62;x'],
    ]) {
      const url = await msal.getAuthCodeUrl({ scopes: SCOPES, redirectUri: REDIRECT_URI, loginHint: hint });
      const page = await new FormClient().follow(url);
      expect(page.body).toContain(
        `name="username" type="email" autocomplete="username" required value="${shown}"`,
      );
    }
  });

  it("issues Entra's v1.0 access token for Graph, which the key set verifies and /v1.0/me accepts", async () => {
    // Graph asks for no token version: Entra's tokens for it are v1.0 whichever endpoint issued them.
    const alice = user('alice');
    const claims = decodeJwt(result.accessToken);
    expect(decodeProtectedHeader(result.accessToken)).toMatchObject({
      kid: provider.context.secrets.signingKey.kid,
      typ: 'JWT',
    });
    expect(claims).toMatchObject({
      aud: GRAPH_APP_ID,
      iss: `https://sts.windows.net/${provider.tenantId}/`,
      scp: GRAPH_SCP,
      oid: alice.objectId,
      tid: provider.tenantId,
      appid: app('taskWeb').clientId,
      appidacr: '1',
      name: alice.displayName,
      upn: alice.userPrincipalName,
      unique_name: alice.userPrincipalName,
      ver: '1.0',
    });
    for (const v2Only of ['azp', 'azpacr', 'preferred_username', 'idp'])
      expect(claims).not.toHaveProperty(v2Only);
    const verifier = createTokenVerifier({
      issuer: provider.running.endpoints.issuer as string,
      jwksUri: provider.running.endpoints.jwksUri as string,
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

  it("answers OpenID Connect's UserInfo at the discovery document's userinfo_endpoint, hosted by Graph as at Entra", async () => {
    // Entra publishes https://graph.microsoft.com/oidc/userinfo; OIDC libraries (openid-client,
    // passport) call it with the Graph token (learn.microsoft.com/entra/identity-platform/userinfo).
    const alice = user('alice');
    const config = await (
      await fetch(`${provider.running.endpoints.issuer}/.well-known/openid-configuration`)
    ).json();
    expect(config.userinfo_endpoint).toBe(`${provider.running.endpoints.authority}/oidc/userinfo`);
    const claims = { sub: decodeJwt(result.idToken).sub, name: alice.displayName, email: alice.mail };
    for (const method of ['GET', 'POST']) {
      const answer = await fetch(config.userinfo_endpoint, {
        method,
        headers: { authorization: `Bearer ${result.accessToken}` },
      });
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual(claims);
    }
    const anonymous = await fetch(config.userinfo_endpoint);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: { code: 'InvalidAuthenticationToken' } });
  });

  it('refreshes the tokens with the refresh token', async () => {
    const msal = msalFor('taskWeb');
    const { code, verifier } = await codeFor(msal);
    const first = await redeem(msal, code, verifier);
    const account = first.account;
    if (!account) throw new Error('no account');
    const refreshed = await msal.acquireTokenSilent({ account, scopes: SCOPES, forceRefresh: true });
    expect(refreshed.accessToken).not.toBe(first.accessToken);
    expect(decodeJwt(refreshed.accessToken)).toMatchObject({ aud: GRAPH_APP_ID, scp: GRAPH_SCP });
    expect((await me(refreshed.accessToken)).status).toBe(200);
  });

  it("refreshes without a scope for the sign-in's original scopes, as Entra", async () => {
    // Entra (MicrosoftDocs/azure-docs#67408): without scope, the answer "includes the original scopes for
    // the current refresh token", not every permission the refresh token may serve.
    const web = app('taskWeb');
    const client = { client_id: web.clientId, client_secret: web.clientSecret };
    const api = app('taskApi').clientId;
    for (const [scopes, aud, scope] of [
      [SCOPES, GRAPH_APP_ID, GRAPH_SCP],
      [[`api://${api}/user_impersonation`], api, `api://${api}/user_impersonation`],
      // Scopes of two resources: the first one's, as Entra's token for such a request.
      [[`api://${api}/user_impersonation`, 'User.Read'], api, `api://${api}/user_impersonation`],
    ] as const) {
      const { code, verifier } = await codeFor(msalFor('taskWeb'), [...scopes]);
      const redeemed = await redeemByForm(code, verifier, `openid profile offline_access ${scopes[0]}`);
      const refreshed = await tokenRequest({
        ...client,
        grant_type: 'refresh_token',
        refresh_token: (await redeemed.json()).refresh_token,
      });
      expect(refreshed.status).toBe(200);
      const body = await refreshed.json();
      expect(body.scope).toBe(scope);
      expect(decodeJwt(body.access_token)).toMatchObject({ aud });
    }
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
    expect(decodeJwt(graph.accessToken)).toMatchObject({ aud: GRAPH_APP_ID, scp: GRAPH_SCP });
    // A permission the API does not expose is still refused.
    await expect(
      msal.acquireTokenSilent({ account, scopes: [`api://${api.clientId}/Tasks.Delete`] }),
    ).rejects.toMatchObject({
      errorCode: 'invalid_scope',
      errorMessage: expect.stringContaining(
        `AADSTS70011: The provided value for the input parameter 'scope' is not valid. The scope api://${api.clientId}/Tasks.Delete is not valid. Trace ID: `,
      ),
    });
  });

  it('answers every refresh with a new refresh token and keeps the old one valid, as Entra', async () => {
    const { original, refresh: send } = await signInForRefresh();
    const refresh = async (refreshToken: string) => {
      const response = await send(refreshToken);
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
    expect(decodeJwt(fromNew.access_token)).toMatchObject({ aud: GRAPH_APP_ID, scp: GRAPH_SCP });
  });

  it('keeps a user signed in while the app refreshes within 90 days of the last refresh, as Entra', async () => {
    const { original, refresh } = await signInForRefresh();
    const day = 24 * 3600 * 1000;
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      // Each refresh token lives 90 days from its own issue ("replace themselves with a fresh token upon
      // every use"): 160 days after the sign-in, the one got on day 80 still works.
      vi.advanceTimersByTime(80 * day);
      const day80 = await refresh(original);
      expect(day80.status).toBe(200);
      vi.advanceTimersByTime(80 * day);
      const day160 = await refresh((await day80.json()).refresh_token);
      expect(day160.status).toBe(200);
      expect(decodeJwt((await day160.json()).access_token)).toMatchObject({ scp: GRAPH_SCP });
      expect((await refresh(original)).status).toBe(400);
    } finally {
      vi.useRealTimers();
    }
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
      tid: provider.tenantId,
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
    // Entra's client-credential answer: no scope, and ext_expires_in (azure-sdk-for-js's recordings).
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'ext_expires_in', 'token_type']);
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: expect.any(Number) });
    expect(decodeJwt(body.access_token)).toMatchObject({
      aud: api.clientId,
      oid: web.principalId,
      idtyp: 'app',
    });
  });

  it("issues client-credential tokens for Azure's resources as Entra does, v1.0, which the stores accept", async () => {
    const web = app('taskWeb');
    const sts = `https://sts.windows.net/${provider.tenantId}/`;
    const { issuer, jwksUri } = provider.running.endpoints;
    const verifier = createTokenVerifier({ issuer: `${issuer}`, jwksUri: `${jwksUri}` });
    for (const resource of ['https://vault.azure.net', 'https://storage.azure.com']) {
      const result = await msalFor('taskWeb').acquireTokenByClientCredential({
        scopes: [`${resource}/.default`],
      });
      const claims = decodeJwt(result?.accessToken ?? '');
      expect(claims).toEqual({
        aud: resource,
        iss: sts,
        idp: sts,
        iat: expect.any(Number),
        nbf: claims.iat,
        exp: (claims.iat ?? 0) + 3600,
        // appidacr 1: the app authenticated with its secret.
        appid: web.clientId,
        appidacr: '1',
        idtyp: 'app',
        oid: web.principalId,
        sub: web.principalId,
        tid: provider.tenantId,
        uti: expect.any(String),
        ver: '1.0',
      });
      const caller = await verifier.verify(result?.accessToken, [resource]);
      expect(caller).toMatchObject({ principalId: web.principalId, clientId: web.clientId, issuer: sts });
    }
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

    const logout = new URL(provider.running.endpoints.logout as string);
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

  it("takes any of the app's redirect URIs after sign-out and to sign in, as Entra has one list of them", async () => {
    // Entra: the post-logout URI "must match one of the redirect URIs registered for your application";
    // system/deploy registers the post-logout paths among them.
    const msal = msalFor('taskWeb');
    const { browser } = await codeFor(msal);
    // By POST this time (a form, as OpenID Connect allows and Entra takes).
    const page = await browser.request(provider.running.endpoints.logout as string, {
      form: { post_logout_redirect_uri: REDIRECT_URI, client_id: app('taskWeb').clientId },
    });
    expect(page.status).toBe(200);
    expect((await confirm(browser, page)).location).toBe(REDIRECT_URI);
    const url = await msal.getAuthCodeUrl({ scopes: SCOPES, redirectUri: `${WEB}/` });
    const signIn = await new FormClient().follow(url, WEB);
    expect(signIn.status).toBe(200);
    expect(signIn.body).toContain('name="password"');
  });

  it('refuses an unregistered post-logout URI', async () => {
    const logout = new URL(provider.running.endpoints.logout as string);
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
    const users = (await provider.running.actions?.testUsers?.(undefined)) as {
      userPrincipalName: string;
      password: string;
    }[];
    expect(users).toContainEqual(
      expect.objectContaining({
        userPrincipalName: user('alice').userPrincipalName,
        password: user('alice').password,
      }),
    );
    expect(users).toHaveLength(Object.keys(provider.context.topology.directory.users).length);
  });

  it('keeps the credentials generated for a data directory; another directory gets its own', async () => {
    expect((await loadSecrets(provider.dataDir, provider.context.topology)).directory).toEqual(
      provider.context.secrets.directory,
    );
    const other = testDataDir();
    try {
      const elsewhere = (await loadSecrets(other.dir, provider.context.topology)).directory;
      expect(elsewhere.users.alice?.password).not.toBe(user('alice').password);
      expect(elsewhere.applications.taskWeb?.clientSecret).not.toBe(app('taskWeb').clientSecret);
      expect(Object.keys(elsewhere.applications)).toEqual(
        Object.keys(provider.context.topology.directory.applications),
      );
    } finally {
      other.remove();
    }
  });

  it('refuses to start with redirect URIs for an application the topology lacks', async () => {
    await expect(
      startEmulator(
        identity,
        { port: 0, redirectUris: { nobody: ['https://127.0.0.1:1/'] } },
        provider.context,
      ),
    ).rejects.toThrow(/redirectUris names nobody, which is not an application/);
  });
});
