/**
 * Variant B's sign-in: OpenID Connect with Microsoft's library for Node (@azure/msal-node), the
 * authorization code flow with PKCE, against the authority `AzureAd__Instance` + `AzureAd__TenantId`.
 * The instance's host is given as a known authority, so MSAL reads that authority's own OpenID metadata
 * instead of asking Microsoft's instance discovery (needed for any host but Microsoft's, harmless for
 * login.microsoftonline.com). Tokens stay in MSAL's in-memory cache (Microsoft.Identity.Web's default);
 * the session cookie names only the account, so a restarted app asks the user to sign in again.
 */
import {
  type AccountInfo,
  ConfidentialClientApplication,
  CryptoProvider,
  InteractionRequiredAuthError,
  LogLevel,
} from '@azure/msal-node';
import type { NextFunction, Request, Response } from 'express';
import type { SignInConfig } from './config.ts';
import { SIGN_IN_FAILED, SIGN_IN_REQUIRED, sendText, UnavailableError } from './errors.ts';
import { cookieOptions, type Sessions } from './session.ts';

/**
 * A sign-in under way: its state and PKCE verifier, in a signed HttpOnly cookie for ten minutes, named
 * after its state and sent only to the callback (as ASP.NET's correlation cookies). One cookie per
 * sign-in: two tabs sent to sign in at once each find their own at the callback.
 */
const SIGN_IN_MAX_AGE_MS = 10 * 60 * 1000;
/** The states the app makes are MSAL's GUIDs. */
const STATE = /^[0-9a-f-]{36}$/i;
/** Graph's `GET /me` needs User.Read; MSAL adds openid, profile and offline_access. */
const SCOPES = ['User.Read'];
export const SIGN_IN_UNAVAILABLE = 'The sign-in service is unavailable. Try again later.';
export const PROFILE_UNAVAILABLE = 'The directory profile is unavailable. Try again later.';

export interface Profile {
  displayName: string;
  /** Mail, or the user principal name when the user has no mail. */
  mail: string;
}

interface SignInState {
  state: string;
  verifier: string;
}

const isSignInState = (value: unknown): value is SignInState =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as SignInState).state === 'string' &&
  typeof (value as SignInState).verifier === 'string';

const origin = (req: Request) => `${req.protocol}://${req.get('host')}`;

export type SignIn = ReturnType<typeof signIn>;

export function signIn(config: SignInConfig, sessions: Sessions, log: (line: string) => void) {
  const authority = `${config.instance.replace(/\/+$/, '')}/${config.tenantId}`;
  const msal = new ConfidentialClientApplication({
    auth: {
      clientId: config.clientId,
      clientSecret: config.clientSecret,
      authority,
      knownAuthorities: [new URL(config.instance).host],
    },
    system: {
      // Warnings and errors only, and never personal data (tokens, names).
      loggerOptions: {
        logLevel: LogLevel.Warning,
        piiLoggingEnabled: false,
        loggerCallback: (_level, message) => log(`msal: ${message}`),
      },
    },
  });
  const pkce = new CryptoProvider();
  const redirectUri = (req: Request) => `${origin(req)}${config.callbackPath}`;
  const signInCookie = (state: string) => `${sessions.names.signIn}.${state}`;
  /** The sign-in of this state, read and spent whatever the outcome; other sign-ins' cookies stay. */
  const spend = (req: Request, res: Response, state: string): unknown => {
    res.clearCookie(signInCookie(state), { path: config.callbackPath });
    return (req.signedCookies as Record<string, unknown>)[signInCookie(state)];
  };

  /** Sends the browser to the provider's sign-in page. */
  async function challenge(req: Request, res: Response) {
    const { verifier, challenge: codeChallenge } = await pkce.generatePkceCodes();
    const state = pkce.createNewGuid();
    let url: string;
    try {
      url = await msal.getAuthCodeUrl({
        scopes: SCOPES,
        redirectUri: redirectUri(req),
        codeChallenge,
        codeChallengeMethod: 'S256',
        state,
        responseMode: 'query',
      });
    } catch (error) {
      throw new UnavailableError(SIGN_IN_UNAVAILABLE, `sign-in: ${(error as Error).message}`);
    }
    const saved: SignInState = { state, verifier };
    res.cookie(signInCookie(state), saved, {
      ...cookieOptions(req),
      path: config.callbackPath,
      signed: true,
      maxAge: SIGN_IN_MAX_AGE_MS,
    });
    res.redirect(url);
  }

  /**
   * Graph `GET /me` with the user's token (a new one when `forceRefresh`): the profile, the status of a
   * refusal, or undefined when the provider gives no token without a new sign-in.
   */
  async function callMe(user: AccountInfo, forceRefresh: boolean) {
    let token: string;
    try {
      token = (await msal.acquireTokenSilent({ account: user, scopes: SCOPES, forceRefresh })).accessToken;
    } catch (error) {
      if (error instanceof InteractionRequiredAuthError) return undefined;
      throw new UnavailableError(PROFILE_UNAVAILABLE, `token for Graph: ${(error as Error).message}`);
    }
    try {
      const response = await fetch(`${config.graphBaseUrl}/me`, {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok) return response.status;
      const me: unknown = await response.json();
      // Read as a profile only when it is one: `null` or a list is Graph's failure too, not the app's.
      if (typeof me !== 'object' || me === null || Array.isArray(me))
        throw new Error(`Graph answered ${response.status} with ${JSON.stringify(me)}, not a profile`);
      return me as Record<string, unknown>;
    } catch (error) {
      throw new UnavailableError(PROFILE_UNAVAILABLE, `Graph /me: ${(error as Error).message}`);
    }
  }

  const account = async (req: Request): Promise<AccountInfo | null> => {
    const id = sessions.get(req)?.account;
    return id ? msal.getTokenCache().getAccountByHomeId(id) : null;
  };

  return {
    challenge,
    /** Lets signed-in users through; pages send others to sign in, the JSON API answers 401. */
    async requireUser(req: Request, res: Response, next: NextFunction) {
      const user = await account(req);
      if (user) {
        res.locals.account = user;
        next();
      } else if (req.path.startsWith('/api/')) sendText(res, 401, SIGN_IN_REQUIRED);
      else await challenge(req, res);
    },

    /** The provider's answer at CallbackPath: the code is redeemed (with the PKCE verifier) for tokens. */
    async callback(req: Request, res: Response) {
      const { code, state, error } = req.query;
      if (typeof error === 'string') log(`sign-in refused by the provider: ${error}`);
      // A state the app never makes names no cookie (and could not name one: a cookie name is a token).
      const saved = typeof state === 'string' && STATE.test(state) ? spend(req, res, state) : undefined;
      if (!isSignInState(saved) || typeof code !== 'string' || state !== saved.state) {
        sendText(res, 400, SIGN_IN_FAILED);
        return;
      }
      try {
        const result = await msal.acquireTokenByCode({
          code,
          scopes: SCOPES,
          redirectUri: redirectUri(req),
          codeVerifier: saved.verifier,
        });
        if (!result.account) throw new Error('the provider named no account');
        sessions.signedIn(req, res, result.account.homeAccountId);
        res.redirect(303, '/');
      } catch (failure) {
        const { errorCode, message } = failure as { errorCode?: string; message: string };
        // The provider did not answer: its outage (503, as at the challenge), not a refused sign-in.
        if (errorCode === 'network_error')
          throw new UnavailableError(SIGN_IN_UNAVAILABLE, `sign-in: ${message}`);
        log(`sign-in failed: ${errorCode ?? message}`);
        sendText(res, 400, SIGN_IN_FAILED);
      }
    },

    /**
     * The signed-in user's profile from Microsoft Graph `GET /me`, called with the user's token;
     * undefined when the user must sign in again (the provider will not give a token without it).
     */
    async profile(res: Response): Promise<Profile | undefined> {
      const user = res.locals.account as AccountInfo;
      let me = await callMe(user, false);
      // A token Graph refuses: a new one, once; the provider says whether the user must sign in again.
      // A fresh token refused too is Graph's failure, not the sign-in's: signing in again would loop.
      if (me === 401) me = await callMe(user, true);
      if (me === undefined) return undefined;
      if (typeof me === 'number')
        throw new UnavailableError(PROFILE_UNAVAILABLE, `Graph /me: Graph answered ${me}`);
      const text = (value: unknown) => (typeof value === 'string' && value ? value : undefined);
      return {
        displayName: text(me.displayName) ?? '',
        mail: text(me.mail) ?? text(me.userPrincipalName) ?? '',
      };
    },

    /** Ends the app's session and then the provider's (its end-session endpoint), back to the start page. */
    async signOut(req: Request, res: Response) {
      const user = await account(req);
      if (user) await msal.getTokenCache().removeAccount(user);
      sessions.clear(res);
      const logout = new URL(`${authority}/oauth2/v2.0/logout`);
      logout.searchParams.set('post_logout_redirect_uri', `${origin(req)}/`);
      logout.searchParams.set('client_id', config.clientId);
      res.redirect(303, logout.href);
    },
    /** The provider's origin: forms may be redirected there (sign-out), so the CSP must allow it. */
    providerOrigin: new URL(config.instance).origin,
  };
}
