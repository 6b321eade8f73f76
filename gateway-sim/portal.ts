/**
 * The developer portal, served by the gateway under `/developer` (APIM gives it a host of its own):
 * the APIs and operations of the imported OpenAPI documents; sign-in at the identity provider as the
 * `developerPortal` app registration (authorization code + PKCE, redirect URI `<portal>/signin-aad`,
 * with @azure/msal-node); then the All-APIs subscription key and a Try it per operation, sent by the
 * portal through the gateway (as APIM's portal does with its CORS proxy) with that key and, for an API
 * with an OAuth 2.0 server attached, the user's access token for that server's default scope.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type AccountInfo,
  ConfidentialClientApplication,
  CryptoProvider,
  InteractionRequiredAuthError,
  LogLevel,
} from '@azure/msal-node';
import type { SharedSecrets } from '../emulators/core/secrets.ts';
import type { GatewayConfig } from './artifacts.ts';
import { discardBody } from './continue.ts';
import { endToEnd } from './forward.ts';
import { cookieSigner } from './portal-cookies.ts';
import { indexPage, messagePage, resultPage, signInPage } from './portal-pages.ts';
import { subscriptionKeys } from './subscriptions.ts';

export const PORTAL_PATH = '/developer';
export const SIGN_IN_FAILED = 'Sign-in failed. Please sign in again.';
export const FORM_REFUSED = 'This form has expired or did not come from the portal. Please try again.';
export const SIGN_IN_REQUIRED = 'Please sign in first.';
export const PROVIDER_UNAVAILABLE = 'The identity provider is unavailable. Try again later.';
/** One cookie per sign-in under way, named after its state: two tabs sent to sign in at once each find theirs. */
const signInCookie = (state: string) => `portal.signin.${state}`;
/** The states the portal makes are MSAL's GUIDs. */
const STATE = /^[0-9a-f-]{36}$/i;
const SESSION_COOKIE = 'portal.session';
const SIGN_IN_MAX_AGE = 600;
const SESSION_MAX_AGE = 8 * 3600;
const MAX_FORM_BYTES = 1024 * 1024;
const TRY_TIMEOUT_MS = 60_000;

export interface PortalOptions {
  /** The provider's authority: `https://…/<tenant>`. */
  authority: string;
  clientId: string;
  clientSecret: string;
}

interface Session {
  account: string;
  csrf: string;
  /** Real time (ms): a cookie kept past its Max-Age opens nothing. */
  expires: number;
}

const isPortalPath = (path: string) => path === PORTAL_PATH || path.startsWith(`${PORTAL_PATH}/`);

class FormError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The form's fields; a body over the limit is read to its end (so the answer reaches the caller) and refused. */
function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded'))
    return Promise.reject(new FormError(400, FORM_REFUSED));
  const tooLarge = new FormError(413, `The form is larger than ${MAX_FORM_BYTES} bytes.`);
  if (Number(req.headers['content-length']) > MAX_FORM_BYTES) return Promise.reject(tooLarge);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_FORM_BYTES) chunks.push(chunk);
    });
    req.on('end', () =>
      size > MAX_FORM_BYTES
        ? reject(tooLarge)
        : resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))),
    );
    req.on('error', reject);
  });
}

const sameText = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export function createPortal(deps: {
  gatewayUrl: string;
  options: PortalOptions;
  config: () => GatewayConfig;
  secrets: SharedSecrets;
  log: (line: string) => void;
}) {
  const { gatewayUrl, options, log } = deps;
  const portalUrl = `${gatewayUrl}${PORTAL_PATH}`;
  const redirectUri = `${portalUrl}/signin-aad`;
  const authorityOrigin = new URL(options.authority).origin;
  const cookies = cookieSigner(
    createHash('sha256').update(`portal-cookies:${deps.secrets.gatewayKeySeed}`).digest('base64url'),
    PORTAL_PATH,
  );
  const msal = new ConfidentialClientApplication({
    auth: {
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      authority: options.authority,
      knownAuthorities: [new URL(options.authority).host],
    },
    // Warnings and errors only, never personal data or tokens.
    system: {
      loggerOptions: {
        logLevel: LogLevel.Warning,
        piiLoggingEnabled: false,
        loggerCallback: (_level, message) => log(`portal msal: ${message}`),
      },
    },
  });
  const pkce = new CryptoProvider();
  /** Sessions live in memory, as MSAL's token cache does: a restarted gateway asks users to sign in again. */
  const sessions = new Map<string, Session>();

  /** The default scopes of the OAuth 2.0 servers attached to APIs (one resource, as Entra requires). */
  const apiScopes = () => {
    const config = deps.config();
    const names = new Set(config.apis.flatMap((api) => api.authorizationServer ?? []));
    return [...names].map((name) => String(config.authorizationServers[name]?.defaultScope ?? ''));
  };

  const page = (
    res: ServerResponse,
    status: number,
    body: string,
    extra: Record<string, string | string[]> = {},
  ) =>
    res
      .writeHead(status, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        // Sign-out's form is redirected to the provider: form-action must allow its origin.
        'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${authorityOrigin}; frame-ancestors 'none'; base-uri 'none'`,
        ...extra,
      })
      .end(body);
  const redirect = (res: ServerResponse, location: string, cookie?: string | string[]) =>
    res
      .writeHead(303, { location, 'cache-control': 'no-store', ...(cookie && { 'set-cookie': cookie }) })
      .end();

  const sessionOf = (req: IncomingMessage) => {
    const id = cookies.get(req, SESSION_COOKIE);
    const session = id ? sessions.get(id) : undefined;
    if (id && session && session.expires <= Date.now()) sessions.delete(id);
    return id && session && session.expires > Date.now() ? { id, session } : undefined;
  };
  const accountOf = (session: Session): Promise<AccountInfo | null> =>
    msal.getTokenCache().getAccountByHomeId(session.account);

  const allApisKey = () => {
    const subscription = deps.config().subscriptions.find((s) => s.scope === '/apis');
    return subscription && { subscription, ...subscriptionKeys(subscription, deps.secrets) };
  };

  async function index(req: IncomingMessage, res: ServerResponse) {
    const signedIn = sessionOf(req);
    const account = signedIn && (await accountOf(signedIn.session));
    const all = allApisKey();
    const user =
      signedIn && account && all
        ? {
            name: account.name ?? account.username,
            userName: account.username,
            primaryKey: all.primaryKey,
            secondaryKey: all.secondaryKey,
            subscriptionName: all.subscription.displayName,
            csrf: signedIn.session.csrf,
          }
        : undefined;
    page(res, 200, indexPage(deps.config().apis, gatewayUrl, user));
  }

  async function signIn(res: ServerResponse) {
    const { verifier, challenge } = await pkce.generatePkceCodes();
    const state = pkce.createNewGuid();
    const url = await msal.getAuthCodeUrl({
      scopes: apiScopes(),
      redirectUri,
      codeChallenge: challenge,
      codeChallengeMethod: 'S256',
      state,
      responseMode: 'query',
    });
    const saved = Buffer.from(JSON.stringify({ state, verifier })).toString('base64url');
    res
      .writeHead(302, {
        location: url,
        'cache-control': 'no-store',
        'set-cookie': cookies.set(signInCookie(state), saved, SIGN_IN_MAX_AGE),
      })
      .end();
  }

  async function callback(req: IncomingMessage, res: ServerResponse, url: URL) {
    const state = url.searchParams.get('state') ?? '';
    // This sign-in's cookie is spent whatever the outcome; other sign-ins' cookies stay.
    const clear = STATE.test(state) ? [cookies.set(signInCookie(state), '', 0)] : [];
    const refuse = (why: string) => {
      log(`portal sign-in refused: ${why}`);
      page(res, 400, messagePage('Sign-in failed', SIGN_IN_FAILED), { 'set-cookie': clear });
    };
    const error = url.searchParams.get('error');
    if (error) return refuse(`the provider answered ${error}`);
    const raw = STATE.test(state) ? cookies.get(req, signInCookie(state)) : undefined;
    let saved: { state?: unknown; verifier?: unknown } = {};
    try {
      saved = raw ? JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) : {};
    } catch {}
    const code = url.searchParams.get('code');
    if (typeof saved.state !== 'string' || typeof saved.verifier !== 'string')
      return refuse(
        'no sign-in under way with this state (cookie missing, expired or not signed by the portal)',
      );
    if (!code || !sameText(state, saved.state)) return refuse('the state does not match');
    let account: AccountInfo | null;
    try {
      ({ account } = await msal.acquireTokenByCode({
        code,
        scopes: apiScopes(),
        redirectUri,
        codeVerifier: saved.verifier,
      }));
    } catch (failure) {
      const { errorCode, message } = failure as { errorCode?: string; message: string };
      return refuse(`the code was not redeemed: ${errorCode ?? message}`);
    }
    if (!account) return refuse('the provider named no account');
    // The same user signing in again (another tab) keeps their session: pages already shown keep their form token.
    const current = sessionOf(req);
    if (current?.session.account === account.homeAccountId) return redirect(res, `${portalUrl}/`, clear);
    // Abandoned sessions are dropped as new ones start, so the map stays bounded by 8 h of sign-ins.
    for (const [old, session] of sessions) if (session.expires <= Date.now()) sessions.delete(old);
    const id = randomBytes(32).toString('base64url');
    sessions.set(id, {
      account: account.homeAccountId,
      csrf: randomBytes(32).toString('base64url'),
      expires: Date.now() + SESSION_MAX_AGE * 1000,
    });
    redirect(res, `${portalUrl}/`, [...clear, cookies.set(SESSION_COOKIE, id, SESSION_MAX_AGE)]);
  }

  /** A signed-in user's form, its CSRF token checked; undefined once refused. */
  async function checkedForm(req: IncomingMessage, res: ServerResponse) {
    const signedIn = sessionOf(req);
    if (!signedIn) {
      discardBody(req, res);
      page(res, 401, signInPage(SIGN_IN_REQUIRED));
      return undefined;
    }
    const form = await readForm(req);
    if (!sameText(form.get('_csrf') ?? '', signedIn.session.csrf)) {
      log('portal form refused: CSRF token missing or wrong');
      page(res, 403, messagePage('Form refused', FORM_REFUSED));
      return undefined;
    }
    return { ...signedIn, form };
  }

  async function endSession(id: string, account: AccountInfo | null) {
    if (account) await msal.getTokenCache().removeAccount(account);
    sessions.delete(id);
  }

  async function signOut(req: IncomingMessage, res: ServerResponse) {
    const logout = new URL(`${options.authority}/oauth2/v2.0/logout`);
    logout.searchParams.set('post_logout_redirect_uri', `${portalUrl}/`);
    logout.searchParams.set('client_id', options.clientId);
    // No session here (expired, or a restarted gateway), but the provider's may still be on: the browser
    // goes there all the same, and the provider asks the user to confirm, so a forged form does no harm.
    if (!sessionOf(req)) {
      discardBody(req, res);
      return redirect(res, logout.href, cookies.set(SESSION_COOKIE, '', 0));
    }
    const checked = await checkedForm(req, res);
    if (!checked) return;
    await endSession(checked.id, await accountOf(checked.session));
    redirect(res, logout.href, cookies.set(SESSION_COOKIE, '', 0));
  }

  async function tryIt(req: IncomingMessage, res: ServerResponse) {
    const checked = await checkedForm(req, res);
    if (!checked) return;
    const config = deps.config();
    const [apiName, operationName] = (checked.form.get('operation') ?? '').split('/');
    const api = config.apis.find((candidate) => candidate.name === apiName);
    const operation = api?.operations.find((candidate) => candidate.name === operationName);
    const all = allApisKey();
    if (!api || !operation || !all) return page(res, 404, messagePage('Try it', 'No such operation.'));
    // The key the user chose, as the console of APIM's portal offers both.
    const slot = checked.form.get('key') ?? 'primary';
    if (slot !== 'primary' && slot !== 'secondary')
      return page(res, 400, messagePage('Try it', 'Choose the primary or the secondary key.'));
    const account = await accountOf(checked.session);
    if (!account) return page(res, 401, signInPage(SIGN_IN_REQUIRED));
    const headers: Record<string, string> = { [api.keyHeader]: all[`${slot}Key`] };
    // What the page shows of the request: the same headers with the secrets masked.
    const shown: [string, string][] = [[api.keyHeader, `(your ${slot} key)`]];
    const server = api.authorizationServer && config.authorizationServers[api.authorizationServer];
    if (server) {
      try {
        const scopes = [String(server.defaultScope)];
        headers.authorization = `Bearer ${(await msal.acquireTokenSilent({ account, scopes })).accessToken}`;
        shown.push(['Authorization', 'Bearer (your access token)']);
      } catch (failure) {
        const { errorCode, message } = failure as { errorCode?: string; message: string };
        log(`portal: no token for ${api.authorizationServer}: ${errorCode ?? message}`);
        // The provider refusing the refresh token (revoked, expired, unknown: Entra's invalid_grant) is no
        // outage: only a new sign-in helps.
        const refused = failure instanceof InteractionRequiredAuthError || errorCode === 'invalid_grant';
        if (!refused) return page(res, 502, messagePage('Try it', PROVIDER_UNAVAILABLE));
        await endSession(checked.id, account);
        return page(res, 401, signInPage(SIGN_IN_REQUIRED), {
          'set-cookie': cookies.set(SESSION_COOKIE, '', 0),
        });
      }
    }
    const body = checked.form.get('body');
    const sendsBody = body !== null && operation.method !== 'GET' && operation.method !== 'HEAD';
    if (sendsBody) {
      headers['content-type'] = 'application/json';
      shown.push(['Content-Type', 'application/json']);
    }
    const url = `${gatewayUrl}/${api.path}${operation.urlTemplate}`;
    let answer: Response;
    try {
      answer = await fetch(url, {
        method: operation.method,
        headers,
        body: sendsBody ? body : undefined,
        signal: AbortSignal.timeout(TRY_TIMEOUT_MS),
      });
    } catch (failure) {
      log(`portal: Try it ${operation.method} ${url} failed: ${(failure as Error).message}`);
      return page(res, 502, messagePage('Try it', 'The gateway did not answer.'));
    }
    // The gateway's answer as a client gets it; the portal's own connection to it is not shown.
    const endToEndHeaders = endToEnd(Object.fromEntries(answer.headers));
    page(
      res,
      200,
      resultPage({
        api,
        operation,
        csrf: checked.session.csrf,
        slot,
        url,
        requestHeaders: shown,
        requestBody: sendsBody ? (body ?? '') : undefined,
        status: answer.status,
        statusText: answer.statusText,
        headers: [...answer.headers].filter(([name]) => name in endToEndHeaders),
        body: await answer.text(),
      }),
    );
  }

  /** Handles a request under `/developer`; answers false for any other path (the gateway's). */
  return async function handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    if (!isPortalPath(url.pathname)) return false;
    // HEAD is GET without the body (RFC 9110 §9.3.2); Node's response sends no body for HEAD.
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const route = `${method} ${url.pathname.slice(PORTAL_PATH.length)}`;
    try {
      if (route === 'GET ') redirect(res, `${portalUrl}/`);
      else if (route === 'GET /') await index(req, res);
      else if (route === 'GET /signin') await signIn(res);
      else if (route === 'GET /signin-aad') await callback(req, res, url);
      else if (route === 'POST /try') await tryIt(req, res);
      else if (route === 'POST /signout') await signOut(req, res);
      else {
        discardBody(req, res);
        page(res, 404, messagePage('Not found', 'There is no such page in the developer portal.'));
      }
    } catch (error) {
      if (error instanceof FormError) {
        discardBody(req, res);
        page(res, error.status, messagePage('Form refused', error.message));
      } else {
        log(`portal: ${req.method} ${url.pathname} failed: ${(error as Error).message}`);
        if (!res.headersSent) page(res, 502, messagePage('Developer portal', PROVIDER_UNAVAILABLE));
      }
    }
    return true;
  };
}
