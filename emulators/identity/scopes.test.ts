/** Which resource a scope names, as Entra reads it: by identifier URI or application id, one per token. */
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { GRAPH_APP_ID } from './resources.ts';
import { useSignInProvider } from './signin-fixture.ts';

const provider = useSignInProvider();
const { app, user, msalFor, codeFor, redeem } = provider;

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
    expect(decodeJwt(graph.accessToken)).toMatchObject({ aud: GRAPH_APP_ID, scp: 'User.Read' });
  });
});
