/**
 * The sign-in tests' provider: the identity emulator in the test's own process, with taskWeb's redirect
 * URIs, and the helpers that drive it as an app (msal-node, the token endpoint) and a browser do.
 */
import {
  type AuthorizationUrlRequest,
  ConfidentialClientApplication,
  CryptoProvider,
} from '@azure/msal-node';
import { afterAll, beforeAll, expect } from 'vitest';
import type { RunningEmulator } from '../core/emulator.ts';
import { startEmulator, type TestContext, testContext, testDataDir } from '../core/testing.ts';
import { FormClient } from './form-client.ts';
import identity from './index.ts';

// The redirect URIs are never served: the test reads the code from the provider's redirect.
export const WEB = 'http://127.0.0.1:1';
export const REDIRECT_URI = `${WEB}/signin-oidc`;
export const SCOPES = ['User.Read'];
/** A Graph token's `scp` for them, with Graph's OpenID permissions as Entra's (resources.ts withGraphOidc). */
export const GRAPH_SCP = 'openid profile User.Read email';

/**
 * Starts the provider in the calling test file's beforeAll (in memory, on a data directory of its own)
 * and stops it in its afterAll. Read `running`, `context`, `tenantId` and `dataDir` inside tests only:
 * they are set once beforeAll has run.
 */
export function useSignInProvider() {
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
    const { verifier, challenge } = await new CryptoProvider().generatePkceCodes();
    const url = await msal.getAuthCodeUrl({
      scopes,
      redirectUri: REDIRECT_URI,
      codeChallenge: challenge,
      codeChallengeMethod: 'S256',
      state: 'state-1',
    });
    return { ...(await codeAt(url)), verifier };
  }

  /**
   * Alice signs in at an authorize URL (state `state-1`); the code the app gets back. By POST, the
   * URL's query is sent as a form to its path (Entra takes an authorize request either way).
   */
  async function codeAt(url: string, method: 'GET' | 'POST' = 'GET') {
    const browser = new FormClient();
    const who = user('alice');
    const { origin, pathname, searchParams } = new URL(url);
    const posted =
      method === 'POST' &&
      (await browser.request(origin + pathname, { form: Object.fromEntries(searchParams) }));
    if (posted && !posted.location)
      throw new Error(`authorize by POST: ${posted.status} ${posted.body.slice(0, 300)}`);
    const page = posted
      ? await browser.follow(posted.location ?? '', REDIRECT_URI)
      : await browser.follow(url, REDIRECT_URI);
    expect(page.location, 'sent back to the app before any sign-in').toBeUndefined();
    const signedIn = await browser.signIn(page, who.userPrincipalName, who.password);
    const back = await browser.follow(signedIn.location ?? '', REDIRECT_URI);
    const redirect = new URL(back.location ?? '');
    expect(redirect.origin + redirect.pathname).toBe(REDIRECT_URI);
    expect(redirect.searchParams.get('state')).toBe('state-1');
    return { code: redirect.searchParams.get('code') ?? '', browser };
  }

  /** What an authorize request the provider sends back before any sign-in brings to the redirect URI. */
  async function answerAtApp(request: Omit<AuthorizationUrlRequest, 'redirectUri'>) {
    const url = await msalFor('taskWeb').getAuthCodeUrl({ ...request, redirectUri: REDIRECT_URI });
    const back = await new FormClient().follow(url, REDIRECT_URI);
    return new URL(back.location ?? '').searchParams;
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

  /** taskWeb redeems a code as raw HTTP does (its secret in the form); `scope` as an app sends it. */
  const redeemByForm = (code: string, verifier: string, scope: string) => {
    const web = app('taskWeb');
    return tokenRequest({
      client_id: web.clientId,
      client_secret: web.clientSecret,
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
      scope,
    });
  };

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
      {
        port: 0,
        redirectUris: { taskWeb: [REDIRECT_URI] },
        postLogoutRedirectUris: { taskWeb: [`${WEB}/`] },
      },
      context,
    );
  });
  afterAll(async () => {
    await running?.stop();
    data.remove();
  });

  return {
    get running() {
      return running;
    },
    get context() {
      return context;
    },
    get tenantId() {
      return tenantId;
    },
    /** The provider's data directory (its keys.json holds the generated credentials). */
    get dataDir() {
      return data.dir;
    },
    app,
    user,
    msalFor,
    codeFor,
    codeAt,
    answerAtApp,
    redeem,
    me,
    tokenRequest,
    redeemByForm,
    expectEntraError,
  };
}
