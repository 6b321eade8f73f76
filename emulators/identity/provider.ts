/**
 * The sign-in half: an `oidc-provider` configured to look like Entra ID's v2.0 endpoints for one tenant
 * (mounted under `/<tenant>`): Entra's routes, its token claims (oid, tid, scp, azp, ver…), resources
 * named by scope (`User.Read` is Graph's, `api://<id>/…` an app's), no consent for the test users, and
 * Entra's error texts (entra-errors.ts) instead of the library's.
 */

import { createHash, randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { type Directory, redirectOrigins } from './directory.ts';
import { page } from './pages.ts';
import { ACCESS_TOKEN_TTL, OIDC_SCOPES, resourceNamer, resources as resourcesOf } from './resources.ts';
import { clientIdOf, entraErrorPage, entraShapes } from './shapes.ts';
import { entraStore } from './store.ts';
import { opaqueClaims } from './tokens.ts';

/**
 * Set by the router on an authorize request (GET) whose scope leaves out `offline_access`: oidc-provider
 * drops that scope without prompt=consent (OpenID Connect's rule), so whether it was asked for travels
 * with the request to the grant in this parameter of ours.
 */
export const NO_OFFLINE_ACCESS = 'taskstack_no_offline_access';

/** Entra's paths, relative to `/<tenant>`. */
export const ROUTES = {
  authorization: '/oauth2/v2.0/authorize',
  token: '/oauth2/v2.0/token',
  end_session: '/oauth2/v2.0/logout',
  jwks: '/discovery/v2.0/keys',
} as const;

/**
 * Lifetimes as Entra's defaults: access tokens an hour, codes ten minutes, refresh tokens 90 days, each
 * from its own issue (a refresh answers a new one, so a user stays signed in while the app refreshes).
 * The grant (the user's consent, which every refresh token needs) lasts until revoked at Entra: here a
 * century, as oidc-provider wants a number; 90 days from the sign-in ended the newer refresh tokens too.
 */
const TTL = {
  AccessToken: ACCESS_TOKEN_TTL,
  ClientCredentials: ACCESS_TOKEN_TTL,
  IdToken: 3600,
  AuthorizationCode: 600,
  RefreshToken: 90 * 24 * 3600,
  Grant: 100 * 365 * 24 * 3600,
  Session: 24 * 3600,
  Interaction: 3600,
};

/** Entra's `sid` is a GUID: the session's uid (oidc-provider's, not one) as a stable one. */
const sessionGuid = (uid: string) =>
  createHash('sha256')
    .update(uid)
    .digest('hex')
    .slice(0, 32)
    .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');

export interface ProviderOptions {
  issuer: string;
  tenantId: string;
  signingKey: JWK;
  cookieKey: string;
  directory: Directory;
  log(message: string): void;
}

export function createProvider(options: ProviderOptions): Provider {
  const { issuer, tenantId, signingKey, cookieKey, directory } = options;
  const interactionPath = (uid: string) => `/${tenantId}/login/${uid}`;
  const resources = resourcesOf(directory, tenantId);
  /**
   * What each sign-in (grant) asked for, without offline_access: a refresh without `scope` is for these,
   * as Entra answers it with "the original scopes for the current refresh token" (its grant serves more).
   */
  const askedScopes = new Map<string, string>();
  /**
   * A sign-in's scopes for one token: its OpenID ones and the first resource's, as Entra issues a token
   * for "the resource laid out in the first scope" when they span several.
   */
  const resourceOf = resourceNamer(directory);
  const firstResourceScopes = (scope: string) => {
    const scopes = scope.split(' ').filter((value) => value && value !== 'offline_access');
    const first = scopes.find((value) => !OIDC_SCOPES.has(value));
    const wanted = first && resourceOf(first);
    return scopes.filter((value) => OIDC_SCOPES.has(value) || resourceOf(value) === wanted).join(' ');
  };

  const configuration: Configuration = {
    clients: directory.applications.map((app) => {
      // An app without redirect URIs can only use client credentials.
      const signsIn = app.redirectUris.length > 0;
      return {
        client_id: app.clientId,
        client_secret: app.clientSecret,
        client_name: app.displayName,
        redirect_uris: app.redirectUris,
        post_logout_redirect_uris: app.redirectUris,
        // Entra lets any confidential client present a refresh token (another app's is AADSTS700007).
        grant_types: signsIn
          ? ['authorization_code', 'refresh_token', 'client_credentials']
          : ['refresh_token', 'client_credentials'],
        response_types: signsIn ? ['code'] : [],
        // Entra takes either; the router turns a Basic header into these form fields (README).
        token_endpoint_auth_method: 'client_secret_post',
      };
    }),
    jwks: { keys: [signingKey] },
    // Authorize by POST as by GET (OpenID Connect requires both; Entra takes both). oidc-provider then
    // wants its session cookie SameSite=None, as Entra's own session cookies are, so that an app's
    // cross-site POST still finds the session; the sign-in page stays bound to its Lax cookie (README).
    enableHttpPostMethods: true,
    cookies: { keys: [cookieKey], long: { httpOnly: true, sameSite: 'none' } },
    routes: ROUTES,
    scopes: [...OIDC_SCOPES],
    claims: {
      openid: ['sub', 'tid', 'ver', 'iat', 'nbf', 'sid', 'uti', 'rh', 'aio'],
      profile: ['name', 'preferred_username', 'oid'],
      email: ['email'],
    },
    // Entra puts the profile claims into the ID token even when it also issues an access token.
    conformIdTokenClaims: false,
    async findAccount(ctx, id) {
      const user = directory.userById(id);
      if (!user) return undefined;
      return {
        accountId: id,
        async claims() {
          // Entra's v2 ID token: `nbf` (= `iat`, which signing keeps), the session, opaque uti/rh/aio.
          const now = Math.floor(Date.now() / 1000);
          const { AuthorizationCode: code, RefreshToken: refreshToken } = ctx.oidc.entities;
          const sessionUid = (code ?? refreshToken)?.sessionUid;
          return {
            iat: now,
            nbf: now,
            ...(sessionUid && { sid: sessionGuid(sessionUid) }),
            ...opaqueClaims(),
            aio: randomBytes(48).toString('base64url'),
            sub: id,
            oid: id,
            tid: tenantId,
            ver: '2.0',
            name: user.displayName,
            preferred_username: user.userPrincipalName,
            ...(user.mail && { email: user.mail }),
          };
        },
      };
    },
    // Consent-free: the test users grant every app what it asks, as an admin-consented tenant does.
    async loadExistingGrant(ctx) {
      const { oidc } = ctx;
      if (!oidc.session?.accountId || !oidc.client) return undefined;
      const grant = new oidc.provider.Grant({
        clientId: oidc.client.clientId,
        accountId: oidc.session.accountId,
      });
      grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(' '));
      if (oidc.params?.[NO_OFFLINE_ACCESS]) grant.rejectOIDCScope('offline_access');
      // Everything the app may ask of every resource, not only what this request names: Entra's refresh
      // token then serves any of them (below).
      for (const [indicator, scope] of resources.consented()) grant.addResourceScope(indicator, scope);
      await grant.save();
      askedScopes.set(grant.jti, firstResourceScopes(String(oidc.params?.scope ?? '')));
      return grant;
    },
    // Entra issues a refresh token on a code redemption when the sign-in asked for offline_access ("Only
    // provided if offline_access scope was requested"; MSAL always asks), and keeps it past a sign-out.
    // Entra's refresh token is bound to the user and the client, not to a resource: the app redeems it
    // for any resource and scope the user has granted it. oidc-provider's refresh grant serves only the
    // resources and scopes its refresh token carries, which it copies from the code right after this
    // decision; so the code is given the grant's (the user's consent: all the app may ask, above).
    async issueRefreshToken(ctx, client, code) {
      if (!client.grantTypeAllowed('refresh_token') || code.kind !== 'AuthorizationCode') return false;
      const grant = ctx.oidc.entities.Grant;
      if (grant?.getRejectedOIDCScope().split(' ').includes('offline_access')) return false;
      if (grant) {
        const granted = resources.consented().map(([indicator]) => indicator);
        const scopes = new Set(code.scope?.split(' ').filter(Boolean));
        for (const indicator of granted)
          for (const scope of grant.getResourceScope(indicator).split(' ')) if (scope) scopes.add(scope);
        Object.assign(code, { scope: [...scopes].join(' '), resource: granted });
      }
      return true;
    },
    // Entra's refresh tokens replace themselves on every use and the old one stays valid (README): a new
    // one on every refresh, and the store keeps the old one unspent (entraStore).
    rotateRefreshToken: true,
    expiresWithSession: async () => false,
    // Required for public clients (no secret), accepted from confidential ones: Entra's rule.
    pkce: { required: (_ctx, client) => client.clientAuthMethod === 'none' },
    extraParams: [NO_OFFLINE_ACCESS],
    interactions: { url: (_ctx, interaction) => interactionPath(interaction.uid) },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: resources.indicators,
      rpInitiatedLogout: {
        enabled: true,
        async logoutSource(ctx, form) {
          const signOut = page(
            'Sign out',
            `${form}<p>Sign out of your account on this provider?</p><button type="submit" form="op.logoutForm" name="logout" value="yes">Sign out</button>`,
            postLogoutOrigins(ctx),
          );
          ctx.set(signOut.headers);
          ctx.body = signOut.html;
        },
        async postLogoutSuccessSource(ctx) {
          const done = page(
            'You signed out of your account',
            '<p>It\u2019s a good idea to close all browser windows.</p>',
          );
          ctx.set(done.headers);
          ctx.body = done.html;
        },
      },
    },
    // Sessions, codes and grants in this process's memory, as documented (lost on restart): the
    // library's own store, given explicitly instead of its development default and that default's warning.
    adapter: entraStore(),
    // A code redeemed twice: Entra refuses the second redemption (AADSTS54005) and revokes nothing; the
    // first one's refresh token keeps working. oidc-provider would revoke the grant and its tokens.
    revokeGrantPolicy: () => false,
    formats: { customizers: { jwt: resources.accessToken } },
    ttl: TTL,
    renderError: entraErrorPage(tenantId),
  };

  /** The origins a sign-out may redirect to: a form's CSP must allow where its redirects lead. */
  const postLogoutOrigins = (ctx: KoaContextWithOIDC) =>
    redirectOrigins(directory.application(clientIdOf(ctx)));

  const provider = new Provider(issuer, configuration);
  entraShapes(provider, tenantId, options.log);
  // A refresh without scope: the sign-in's scopes, filled in before oidc-provider reads the body (the
  // router hands it over parsed).
  provider.use(async (ctx, next) => {
    const body = (ctx.req as { body?: Record<string, string> }).body;
    if (
      ctx.path === ROUTES.token &&
      body?.grant_type === 'refresh_token' &&
      body.refresh_token &&
      !body.scope
    ) {
      const refreshToken = await provider.RefreshToken.find(body.refresh_token, { ignoreExpiration: true });
      const asked = refreshToken?.grantId && askedScopes.get(refreshToken.grantId);
      if (asked) body.scope = asked;
    }
    await next();
  });
  return provider;
}
