/**
 * Resources, as Entra names them by scope: `api://<clientId>/<scope>` (its identifier URI) or
 * `<clientId>/<scope>` (its application id) is the app's that exposes that API, anything else
 * (`User.Read`, `https://graph.microsoft.com/…`) is Microsoft Graph's. Access tokens for them are JWTs in
 * Entra's v2 shape rather than RFC 9068's.
 */
import { type Configuration, errors } from 'oidc-provider';
import type { Directory } from './directory.ts';
import { type TokenVersion, versionClaims } from './tokens.ts';

/** Microsoft Graph: its resource URI and the application id its tokens carry as `aud`. */
export const GRAPH_RESOURCE = 'https://graph.microsoft.com';
export const GRAPH_APP_ID = '00000003-0000-0000-c000-000000000000';
/** The delegated permissions Graph grants here: what `GET /me` needs. */
const GRAPH_SCOPES = ['User.Read'];
export const OIDC_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access']);

/**
 * Graph's token and its answer name the OpenID permissions too, which are Graph's: Entra answers
 * `openid profile User.Read email` for a sign-in asking `openid profile offline_access User.Read` (every
 * one granted here, email too; offline_access is about refresh tokens, never a `scp`).
 */
export const withGraphOidc = (scopes: string[]) => [...new Set(['openid', 'profile', ...scopes, 'email'])];
export const ACCESS_TOKEN_TTL = 3600;

/** `<application id>/…`: Entra's other way of naming a resource ("a valid URI … or a valid Guid"). */
const APP_ID_SCOPE = /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\//i;

/**
 * `api://x/user_impersonation` → `api://x`, `<appId>/.default` → `<appId>`; a bare name (`User.Read`) is
 * Graph's, as at Entra. The resource as the scope names it (resourceNamer gives the one URI it is known by).
 */
export const resourceOfScope = (scope: string) => {
  const slash = scope.lastIndexOf('/');
  const named = /^[a-z]+:\/\//.test(scope) ? slash > scope.indexOf('//') + 1 : APP_ID_SCOPE.test(scope);
  return named ? scope.slice(0, slash) : GRAPH_RESOURCE;
};

/** The resource a scope names, by its identifier URI also when the scope names it by application id. */
export function resourceNamer(directory: Directory) {
  return (scope: string) => {
    const named = resourceOfScope(scope);
    if (!APP_ID_SCOPE.test(scope)) return named;
    const appId = named.toLowerCase();
    if (appId === GRAPH_APP_ID) return GRAPH_RESOURCE;
    return directory.applications.find((app) => app.clientId === appId)?.identifierUri ?? named;
  };
}
const bareScope = (scope: string) => scope.slice(scope.lastIndexOf('/') + 1);

/** `https://vault.azure.net/.default` and `https://vault.azure.net` name the same resource. */
export const withoutDefault = (resource: string) => resource.replace(/\/\.default$/, '');

/**
 * The audience and version of a managed identity's token for `resource` (as App Service's endpoint takes
 * it, without `/.default`), or undefined for one Entra does not know. An app of the directory is asked
 * for by its identifier URI or application id, and its tokens are v2 (`requestedAccessTokenVersion: 2`,
 * system/deploy): `aud` is its application id. Any other `api://` resource is unknown (identifier URIs
 * are the tenant's own apps'). Other resources (Azure's: `https://vault.azure.net`…) are not checked;
 * their tokens are v1.0 with `aud` the resource as asked for, trailing slash and all, as at Entra.
 */
export function managedIdentityAudience(directory: Directory) {
  return (requested: string): { audience: string; version: TokenVersion } | undefined => {
    const resource = withoutDefault(requested);
    const app = directory.applications.find(
      (candidate) => candidate.identifierUri === resource || candidate.clientId === resource,
    );
    if (app) return { audience: app.clientId, version: '2.0' };
    return /^api:\/\//i.test(resource) ? undefined : { audience: resource, version: '1.0' };
  };
}

type Features = NonNullable<Configuration['features']>;
type JwtCustomizer = NonNullable<NonNullable<NonNullable<Configuration['formats']>['customizers']>['jwt']>;

/**
 * Azure's resources an app may get a token of its own for (`<resource>/.default`, client credentials).
 * Their apps ask for no token version, so Entra's tokens for them are v1.0, `aud` the resource URI.
 */
const AZURE_RESOURCES = new Set([
  'https://vault.azure.net',
  'https://storage.azure.com',
  'https://cosmos.azure.com',
  'https://eventhubs.azure.net',
  'https://servicebus.azure.net',
  'https://management.azure.com',
]);

interface ResourceServer {
  audience: string;
  scopes: string[];
  version: TokenVersion;
}

export function resources(directory: Directory, tenantId: string) {
  /** A resource's audience, scopes and token version: Graph, an API app (`api://<clientId>`), Azure's. */
  function resourceServer(indicator: string): ResourceServer | undefined {
    // Graph asks for no token version: its tokens are v1.0, as Azure's resources' (below).
    if (indicator === GRAPH_RESOURCE) return { audience: GRAPH_APP_ID, scopes: GRAPH_SCOPES, version: '1.0' };
    if (AZURE_RESOURCES.has(indicator)) return { audience: indicator, scopes: [], version: '1.0' };
    const app = directory.applications.find((candidate) => candidate.identifierUri === indicator);
    return app && { audience: app.clientId, scopes: app.scopes, version: '2.0' };
  }

  const resourceOf = resourceNamer(directory);

  /** Every scope value that names one of the resource's permissions, by identifier URI or application id. */
  function scopeValues(indicator: string, server: ResourceServer) {
    const qualified = [...new Set([indicator, server.audience])].flatMap((prefix) =>
      [...server.scopes, '.default'].map((scope) => `${prefix}/${scope}`),
    );
    // Graph's permissions may be asked for bare (`User.Read`), as Entra allows.
    const bare = indicator === GRAPH_RESOURCE ? server.scopes : [];
    return [...bare, ...qualified].join(' ');
  }

  /**
   * What a client may ask of each resource on a user's behalf: every resource of the directory (Graph and
   * each app that exposes an API), all its permissions. The tenant is consent-free (README), so that is
   * also what every user has granted every app.
   */
  const consented = (): [indicator: string, scope: string][] =>
    [GRAPH_RESOURCE, ...directory.applications.flatMap((app) => app.identifierUri ?? [])].flatMap(
      (indicator) => {
        const server = resourceServer(indicator);
        return server ? [[indicator, scopeValues(indicator, server)] as [string, string]] : [];
      },
    );

  /**
   * An app's permission its API does not expose (the topology lists them all): Entra refuses it at the
   * authorize endpoint (AADSTS650053, entra-errors.ts). Graph's are not checked: Graph has many more
   * permissions than the User.Read served here, which Entra would grant.
   */
  function refuseUnexposed(scope: unknown, indicator: string, clientId: string) {
    const server = resourceServer(indicator);
    if (!server || indicator === GRAPH_RESOURCE) return;
    const offered = scopeValues(indicator, server).split(' ');
    const unexposed = String(scope ?? '')
      .split(' ')
      .find(
        (value) =>
          value && !OIDC_SCOPES.has(value) && resourceOf(value) === indicator && !offered.includes(value),
      );
    if (!unexposed) return;
    const app = directory.application(clientId);
    throw new errors.InvalidScope(
      `The application '${app?.displayName ?? clientId}' asked for scope '${bareScope(unexposed)}' that doesn't exist on the resource '${server.audience}'. Contact the app vendor.`,
      unexposed,
    );
  }

  const indicators: Features['resourceIndicators'] = {
    enabled: true,
    // The resources a request's scopes name (authorize: all of them; Graph when only OpenID scopes are
    // asked for). Choosing the one a token is for (`oneOf`: what the code or refresh token may serve),
    // it is the one the token request's scopes name, as at Entra.
    async defaultResource(ctx, _client, oneOf) {
      const scopes = String(ctx.oidc.params?.scope ?? '')
        .split(' ')
        .filter((s) => s && !OIDC_SCOPES.has(s));
      const resources = [...new Set(scopes.map(resourceOf))];
      if (resources.length === 0) return GRAPH_RESOURCE;
      return oneOf && resources.length === 1 ? resources[0] : resources;
    },
    useGrantedResource: async () => true,
    async getResourceServerInfo(ctx, indicator, client) {
      const server = resourceServer(indicator);
      // Azure's resources are served to apps only: a user's (delegated) token for them is not made here.
      const appOnly = ctx.oidc.params?.grant_type === 'client_credentials';
      if (!server || (AZURE_RESOURCES.has(indicator) && !appOnly)) throw new errors.InvalidTarget();
      if (ctx.oidc.route === 'authorization')
        refuseUnexposed(ctx.oidc.params?.scope, indicator, client.clientId);
      return {
        scope: scopeValues(indicator, server),
        audience: server.audience,
        accessTokenFormat: 'jwt',
        accessTokenTTL: ACCESS_TOKEN_TTL,
        jwt: { sign: { alg: 'RS256' } },
      };
    },
  };

  const accessToken: JwtCustomizer = async (_ctx, token, jwt) => {
    const { payload } = jwt;
    const clientId = String(payload.client_id);
    const server = resourceServer(token.resourceServer?.identifier() ?? '');
    const granted = String(payload.scope ?? '')
      .split(' ')
      .filter(Boolean);
    const user = 'accountId' in token && token.accountId ? directory.userById(token.accountId) : undefined;
    const app = directory.application(clientId);
    // The app authenticated with its secret (the only credential taken here). Users get no token for
    // Azure's resources (getResourceServerInfo).
    const tenant = { tenantId, issuer: String(payload.iss) };
    const shaped = versionClaims(server?.version ?? '2.0', tenant, clientId, '1');
    // A v1.0 token's audience is the resource as the scope names it: Graph by its URI or application id.
    const byUri =
      server?.version === '1.0' && granted.some((scope) => scope.startsWith(`${GRAPH_RESOURCE}/`));
    const common = {
      aud: byUri ? GRAPH_RESOURCE : payload.aud,
      iat: payload.iat,
      nbf: payload.iat,
      exp: payload.exp,
      tid: tenantId,
      uti: payload.jti,
      ...shaped,
    };
    if (user) {
      const asked = granted.some((scope) => scope.endsWith('/.default'))
        ? (server?.scopes ?? [])
        : [...new Set(granted.map(bareScope))];
      const scp = server?.audience === GRAPH_APP_ID ? withGraphOidc(asked) : asked;
      // A member user's v1.0 token names the user by `upn` and `unique_name`, and has no `idp`.
      const { idp: _, ...claims }: Record<string, unknown> = common;
      const names =
        server?.version === '1.0'
          ? { upn: user.userPrincipalName, unique_name: user.userPrincipalName }
          : { preferred_username: user.userPrincipalName };
      jwt.payload = {
        ...claims,
        oid: user.objectId,
        sub: user.objectId,
        name: user.displayName,
        ...names,
        scp: scp.join(' '),
      };
    } else {
      jwt.payload = { ...common, oid: app?.principalId, sub: app?.principalId, idtyp: 'app' };
    }
    jwt.header = { typ: 'JWT' };
  };

  return { indicators, accessToken, consented };
}
