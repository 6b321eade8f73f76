/** What the provider refuses, as Entra does (AADSTS codes, pages and redirects), and how it takes bad input. */
import { CryptoProvider } from '@azure/msal-node';
import { decodeJwt, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { FormClient } from './form-client.ts';
import { WRONG_CREDENTIALS } from './login.ts';
import { GRAPH_APP_ID } from './resources.ts';
import { GRAPH_SCP, REDIRECT_URI, SCOPES, useSignInProvider, WEB } from './signin-fixture.ts';

const provider = useSignInProvider();
const { app, user, msalFor, codeFor, answerAtApp, redeem, me, tokenRequest, expectEntraError } = provider;

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
    const url = new URL(provider.running.endpoints.authorize as string);
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
    const url = new URL(provider.running.endpoints.authorize as string);
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
      `AADSTS700016: Application with identifier &#39;22222222-2222-2222-2222-222222222222&#39; was not found in the directory &#39;${provider.tenantId}&#39;.`,
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
        `^AADSTS500011: The resource principal named ${unknown} was not found in the tenant named ${provider.tenantId}\\.`,
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
    const answer = await answerAtApp({ scopes: SCOPES, prompt: 'none' });
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
    expect(decodeJwt(refreshed.accessToken)).toMatchObject({ aud: GRAPH_APP_ID, scp: GRAPH_SCP });
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
      `Application with identifier '11111111-1111-1111-1111-111111111111' was not found in the directory '${provider.tenantId}'.`,
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
    const missing = await fetch(`${provider.running.endpoints.graph}/me`);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({
      error: { code: 'InvalidAuthenticationToken', message: 'Access token is empty.' },
    });

    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({
      oid: user('alice').objectId,
      tid: provider.tenantId,
      azp: app('taskWeb').clientId,
      scp: GRAPH_SCP,
    })
      .setProtectedHeader({ alg: 'RS256', kid: provider.context.secrets.signingKey.kid })
      .setIssuer(provider.running.endpoints.issuer as string)
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

  it('asks no consent and has no account picker: prompt=consent or select_account signs in and returns to the app', async () => {
    for (const prompt of ['consent', 'select_account']) {
      const msal = msalFor('taskWeb');
      const browser = new FormClient();
      const url = await msal.getAuthCodeUrl({ scopes: SCOPES, redirectUri: REDIRECT_URI, prompt });
      const page = await browser.follow(url);
      const alice = user('alice');
      const signedIn = await browser.signIn(page, alice.userPrincipalName, alice.password);
      const back = await browser.follow(signedIn.location ?? '', REDIRECT_URI);
      expect(back.location).toMatch(/^http:\/\/127\.0\.0\.1:1\/signin-oidc\?code=/);
    }
  });

  it('sends the implicit flow back as Entra does for an app without it (AADSTS700051 token, 700054 id_token)', async () => {
    const web = app('taskWeb');
    const cases = [
      ['token', 700051],
      ['id_token', 700054],
      ['code id_token', 700054],
    ] as const;
    for (const [responseType, code] of cases) {
      const url = new URL(provider.running.endpoints.authorize as string);
      const params = { client_id: web.clientId, response_type: responseType, redirect_uri: REDIRECT_URI };
      url.search = new URLSearchParams({ ...params, scope: 'openid', nonce: 'n-1', state: 's-1' }).toString();
      const back = await new FormClient().follow(url.href, REDIRECT_URI);
      const answer = new URLSearchParams(new URL(back.location ?? '').hash.slice(1));
      expect(answer.get('error')).toBe('unsupported_response_type');
      expect(answer.get('error_description')).toMatch(
        new RegExp(
          `^AADSTS${code}: response_type '${responseType.split(' ').pop()}' is not enabled for the application\\. Trace ID: `,
        ),
      );
      expect(answer.get('state')).toBe('s-1');
    }
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
    const notForm = await fetch(provider.running.endpoints.token as string, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"grant_type": ',
    });
    expect(notForm.status).toBe(400);
    expect(await notForm.text()).not.toMatch(/ at .*\.js/);
    await provider.running.health();
  });
});
