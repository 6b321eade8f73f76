/** Which resource a scope names, as Entra reads it: by identifier URI or application id, one per token. */
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { GRAPH_APP_ID } from './resources.ts';
import { GRAPH_SCP, REDIRECT_URI, useSignInProvider } from './signin-fixture.ts';

const provider = useSignInProvider();
const { app, user, msalFor, codeFor, codeAt, answerAtApp, redeem, tokenRequest, expectEntraError } = provider;

describe('scopes', () => {
  it('names a resource by its application id as by its identifier URI (<appId>/.default, <appId>/<scope>)', async () => {
    const api = app('taskApi');
    // A daemon's client credentials, as MSAL's docs write the scope.
    const daemon = await msalFor('taskWeb').acquireTokenByClientCredential({
      scopes: [`${api.clientId}/.default`],
    });
    expect(decodeJwt(daemon?.accessToken ?? '')).toMatchObject({
      aud: api.clientId,
      oid: app('taskWeb').principalId,
      idtyp: 'app',
    });
    // A user's token for the API, and Graph by its own application id.
    const msal = msalFor('taskWeb');
    const scopes = [`${api.clientId}/user_impersonation`];
    const { code, verifier } = await codeFor(msal, scopes);
    const signedIn = await redeem(msal, code, verifier, scopes);
    expect(decodeJwt(signedIn.accessToken)).toMatchObject({
      aud: api.clientId,
      scp: 'user_impersonation',
      oid: user('alice').objectId,
    });
    const account = signedIn.account;
    if (!account) throw new Error('no account');
    const graph = await msal.acquireTokenSilent({ account, scopes: [`${GRAPH_APP_ID}/User.Read`] });
    expect(decodeJwt(graph.accessToken)).toMatchObject({ aud: GRAPH_APP_ID, scp: GRAPH_SCP });
  });

  it("names Graph's OpenID permissions in its token's scp and the answer's scope, as Entra; an API's token none", async () => {
    // Entra's Graph token for openid profile offline_access User.Read: "scp": "openid profile User.Read
    // email" (the OpenID scopes are Graph's permissions, all granted here; offline_access is never a scp).
    const msal = msalFor('taskWeb');
    const { code, verifier } = await codeFor(msal);
    const graph = await redeem(msal, code, verifier);
    expect(decodeJwt(graph.accessToken).scp).toBe(GRAPH_SCP);
    expect(graph.scopes).toEqual(['openid', 'profile', 'User.Read', 'email']);
    if (!graph.account) throw new Error('no account');
    const refreshed = await msal.acquireTokenSilent({
      account: graph.account,
      scopes: ['User.Read'],
      forceRefresh: true,
    });
    expect(refreshed.scopes).toEqual(['openid', 'profile', 'User.Read', 'email']);
    const api = [`api://${app('taskApi').clientId}/user_impersonation`];
    const forApi = await msal.acquireTokenSilent({ account: graph.account, scopes: api });
    expect(decodeJwt(forApi.accessToken).scp).toBe('user_impersonation');
    expect(forApi.scopes).toEqual(api);
  });

  it('gives a refresh token only when the sign-in asked for offline_access, as Entra', async () => {
    // "refresh_token … Only provided if offline_access scope was requested" (Entra's auth code flow):
    // msal-node always asks for it; an app building its own authorize URL may not.
    const msal = msalFor('taskWeb');
    const web = app('taskWeb');
    const redeemed = async (scope: string, method: 'GET' | 'POST' = 'GET') => {
      const url = new URL(
        await msal.getAuthCodeUrl({ scopes: [], redirectUri: REDIRECT_URI, state: 'state-1' }),
      );
      url.searchParams.set('scope', scope);
      const { code } = await codeAt(url.href, method);
      const response = await tokenRequest({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        client_id: web.clientId,
        client_secret: web.clientSecret,
        scope: 'User.Read',
      });
      expect(response.status).toBe(200);
      return (await response.json()) as Record<string, unknown>;
    };
    // By GET and by POST (an authorize request may be a form), as at Entra.
    for (const method of ['GET', 'POST'] as const) {
      const online = await redeemed('openid profile User.Read', method);
      expect(online).toMatchObject({ access_token: expect.any(String), id_token: expect.any(String) });
      expect(online).not.toHaveProperty('refresh_token');
      expect(await redeemed('openid profile offline_access User.Read', method)).toMatchObject({
        refresh_token: expect.any(String),
      });
    }
  });

  it("gives Graph's v1.0 token the audience the scope names it by, as Entra (its URI or its application id)", async () => {
    const msal = msalFor('taskWeb');
    const scopes = ['https://graph.microsoft.com/User.Read'];
    const { code, verifier } = await codeFor(msal, scopes);
    const signedIn = await redeem(msal, code, verifier, scopes);
    expect(decodeJwt(signedIn.accessToken)).toMatchObject({
      aud: 'https://graph.microsoft.com',
      ver: '1.0',
      scp: GRAPH_SCP,
    });
    const daemon = await msal.acquireTokenByClientCredential({
      scopes: ['https://graph.microsoft.com/.default'],
    });
    expect(decodeJwt(daemon?.accessToken ?? '')).toMatchObject({
      aud: 'https://graph.microsoft.com',
      ver: '1.0',
      idtyp: 'app',
      appid: app('taskWeb').clientId,
    });
  });

  it('refuses a token request whose scopes name two resources, as Entra (AADSTS28000; 70011 for client credentials)', async () => {
    const api = `api://${app('taskApi').clientId}`;
    const web = app('taskWeb');
    const both = `${api}/.default https://graph.microsoft.com/.default`;
    const daemon = await tokenRequest({
      grant_type: 'client_credentials',
      client_id: web.clientId,
      client_secret: web.clientSecret,
      scope: both,
    });
    expect(await expectEntraError(daemon, 400, 'invalid_scope', 70011)).toMatch(
      new RegExp(
        `^AADSTS70011: The provided request must include a 'scope' input parameter\\. The provided value for the input parameter 'scope' is not valid\\. The scope ${both} is not valid\\. Trace ID: `,
      ),
    );
    // A web app redeeming its code for Graph and the API at once, as msal-node sends it (OIDC scopes added).
    const msal = msalFor('taskWeb');
    const scopes = [`${api}/user_impersonation`, 'User.Read'];
    const { code, verifier } = await codeFor(msal, scopes);
    await expect(redeem(msal, code, verifier, scopes)).rejects.toMatchObject({
      errorCode: 'invalid_scope',
      errorMessage: expect.stringMatching(
        new RegExp(
          `AADSTS28000: Provided value for the input parameter scope is not valid because it contains more than one resource\\. Scope ${api}/user_impersonation User\\.Read( \\w+)+ is not valid\\. Trace ID: `,
        ),
      ),
    });
  });

  it("sends a permission the API does not expose back to the app, before any sign-in, with Entra's AADSTS650053", async () => {
    const api = app('taskApi');
    const answer = await answerAtApp({ scopes: [`api://${api.clientId}/Tasks.Delete`], state: 'state-1' });
    expect(answer.get('error')).toBe('invalid_client');
    expect(answer.get('error_description')).toMatch(
      new RegExp(
        `^AADSTS650053: The application 'Task Management web app' asked for scope 'Tasks\\.Delete' that doesn't exist on the resource '${api.clientId}'\\. Contact the app vendor\\. Trace ID: `,
      ),
    );
    expect(answer.get('state')).toBe('state-1');
  });
});
