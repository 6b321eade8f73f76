/**
 * Entra's shapes on oidc-provider's answers: the token response members MSAL reads, and errors in
 * Entra's words (entra-errors.ts) — JSON at the token endpoint, a page at authorize and logout, the same
 * parameters on a redirect back to the app.
 */
import type Provider from 'oidc-provider';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { type ErrorSubject, entraErrorBody, type ProviderError, toEntraError } from './entra-errors.ts';
import { errorBody, page } from './pages.ts';
import { GRAPH_RESOURCE, OIDC_SCOPES, resourceOfScope, withGraphOidc } from './resources.ts';

export const clientIdOf = (ctx: KoaContextWithOIDC) =>
  String(ctx.oidc?.client?.clientId ?? ctx.oidc?.params?.client_id ?? '');
const subjectOf = (ctx: KoaContextWithOIDC, tenantId: string): ErrorSubject => {
  const scopes = String(ctx.oidc?.params?.scope ?? '').split(' ');
  const resource = scopes.find((scope) => scope && !OIDC_SCOPES.has(scope));
  return {
    clientId: clientIdOf(ctx),
    tenantId,
    redirectUri: String(ctx.oidc?.params?.redirect_uri ?? ''),
    resource: resource ? resourceOfScope(resource) : GRAPH_RESOURCE,
    responseType: String(ctx.oidc?.params?.response_type ?? ''),
  };
};

/**
 * Entra's token response members (`client_info`: the user's home account, which MSAL reads;
 * `ext_expires_in`; no `scope` for client credentials), and JSON errors
 * as Entra words them: status, `error`, `error_description` AADSTS….
 */
export function entraShapes(provider: Provider, tenantId: string, log: (message: string) => void) {
  // The error handlers inside oidc-provider tell what they caught only through these events.
  const remember = (ctx: KoaContextWithOIDC, error: Error) => {
    ctx.state.providerError = error;
  };
  provider.on('grant.error', remember);
  provider.on('authorization.error', remember);
  provider.on('end_session.error', remember);
  provider.on('server_error', (ctx: KoaContextWithOIDC, error: Error) => {
    remember(ctx, error);
    log(`sign-in provider failed: ${error.message}`);
  });
  provider.use(async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    const body = ctx.body as Record<string, unknown> | undefined;
    const accountId = ctx.oidc?.entities.Grant?.accountId;
    if (ctx.oidc?.route === 'token' && ctx.status === 200 && body) {
      body.ext_expires_in = body.expires_in;
      if (accountId) {
        body.client_info = Buffer.from(JSON.stringify({ uid: accountId, utid: tenantId })).toString(
          'base64url',
        );
        const resource = ctx.oidc.entities.AccessToken?.resourceServer?.identifier();
        if (resource === GRAPH_RESOURCE && typeof body.scope === 'string')
          body.scope = withGraphOidc(body.scope.split(' ').filter(Boolean)).join(' ');
      }
      // An app's own token (client credentials): Entra's answer names no scope.
      else delete body.scope;
    }
    const thrown = ctx.state.providerError as ProviderError | undefined;
    if (!thrown) return;
    const subject = subjectOf(ctx, tenantId);
    if (/refresh token is expired/.test(thrown.error_detail ?? '')) {
      const expired = await provider.RefreshToken.find(String(ctx.oidc.params?.refresh_token), {
        ignoreExpiration: true,
      });
      subject.refreshTokenIssuedAt = expired?.iat;
    }
    const entra = toEntraError(thrown, subject);
    const location = ctx.response.get('location');
    // An error sent back to the app's redirect URI (absolute): Entra's words in the same parameters.
    if (location && URL.canParse(location)) {
      const back = new URL(location);
      const params = back.hash ? new URLSearchParams(back.hash.slice(1)) : back.searchParams;
      if (!params.has('error')) return;
      params.set('error', entra.error);
      params.set('error_description', entraErrorBody(entra).error_description);
      if (back.hash) back.hash = params.toString();
      ctx.redirect(back.href);
      return;
    }
    if (ctx.type !== 'application/json') return;
    ctx.status = entra.status;
    ctx.body = entraErrorBody(entra);
    // oidc-provider names its auth scheme on 401s; Entra sends none.
    ctx.remove('www-authenticate');
  });
}

/** Error pages (authorize, logout): the AADSTS line, no redirect. */
export const entraErrorPage =
  (tenantId: string): Configuration['renderError'] =>
  async (ctx, _out, error) => {
    const entra = toEntraError(error as ProviderError, subjectOf(ctx, tenantId));
    const shown = page('Sign in', errorBody(entra));
    ctx.status = entra.status;
    ctx.set(shown.headers);
    ctx.type = 'html';
    ctx.body = shown.html;
  };
