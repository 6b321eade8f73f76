/**
 * The identity emulator's HTTP surface: the App Service managed-identity endpoint (`/msi/token`), Graph's
 * `/v1.0/me`, and under `/<tenant>` Entra's discovery documents, the sign-in page and the OAuth endpoints
 * (handed to oidc-provider, mounted there).
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson } from '../core/http.ts';
import type { IdentitySecrets } from '../core/secrets.ts';
import type { Directory } from './directory.ts';
import { openIdConfiguration } from './discovery.ts';
import {
  type EntraError,
  entraErrorBody,
  missingParameter,
  multipleResources,
  notDefaultScope,
  postOnly,
  resourceParameter,
  unknownTenant,
  unregisteredCertificate,
} from './entra-errors.ts';
import { USERINFO_PATH } from './graph.ts';
import { errorBody, sendPage } from './pages.ts';
import { NO_OFFLINE_ACCESS, ROUTES } from './provider.ts';
import { managedIdentityAudience, OIDC_SCOPES, resourceNamer, withoutDefault } from './resources.ts';
import type { TokenIssuer } from './tokens.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

export interface IdentityRoutesOptions {
  tenantId: string;
  /** `https://127.0.0.1:<port>`. */
  authority: string;
  issuer: string;
  jwksUri: string;
  identities: Record<string, IdentitySecrets>;
  tokens: TokenIssuer;
  /** oidc-provider's request handler; it is given paths relative to `/<tenant>`. */
  provider: Handler;
  login(req: IncomingMessage, res: ServerResponse, uid: string): Promise<void>;
  graph: Handler;
  directory: Directory;
}

/** The only protocol version with `X-IDENTITY-HEADER` (2017-09-01 used a `secret` header). */
const MSI_API_VERSION = '2019-08-01';

const sameSecret = (given: string, expected: string) => {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
};

/** App Service's token endpoint answers errors as `{statusCode, message, correlationId}`, which MSAL reads. */
const msiError = (res: ServerResponse, statusCode: number, message: string) =>
  sendJson(res, statusCode, { statusCode, message, correlationId: randomUUID() });

/** oidc-provider's own limit for form bodies. */
const FORM_BODY_LIMIT = 56 * 1024;

/** A request's form fields; Entra reads only a form body, so any other body has none. */
async function readForm(req: IncomingMessage) {
  const form = /^application\/x-www-form-urlencoded/i.test(req.headers['content-type'] ?? '');
  return new URLSearchParams(form ? (await readBody(req, FORM_BODY_LIMIT)).toString('utf8') : '');
}

/** Hands oidc-provider a body this router has read (it takes a parsed one, with a warning once). */
const handOver = (req: IncomingMessage, form: URLSearchParams) =>
  Object.assign(req, { body: Object.fromEntries(form) });

/**
 * Token requests are read here and handed to oidc-provider as an already parsed body, so that two of
 * Entra's habits it lacks can be given to it:
 * - Entra takes the client secret as form fields or as a Basic header on any client; oidc-provider binds
 *   one method per client (here client_secret_post), so a Basic header becomes those fields.
 * - oidc-provider keeps `offline_access` only under prompt=consent, so refresh tokens lack it, and it
 *   refuses a refresh that asks for it again (as MSAL does); the refresh token is what it asks for.
 * Entra's refusals it lacks are answered here (the returned error, tokenRefusal).
 */
async function normaliseTokenRequest(
  req: IncomingMessage,
  directory: Directory,
): Promise<EntraError | undefined> {
  const body = await readForm(req);
  const header = req.headers.authorization;
  const decoded =
    header && /^basic /i.test(header) ? Buffer.from(header.slice(6).trim(), 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon >= 0) {
    // RFC 6749 2.3.1: both halves are form-urlencoded before being joined.
    const formDecode = (text: string) => {
      try {
        return decodeURIComponent(text.replace(/\+/g, ' '));
      } catch {
        return text; // not form-encoded: compared as given, and refused
      }
    };
    if (!body.has('client_id')) body.set('client_id', formDecode(decoded.slice(0, colon)));
    if (!body.has('client_secret')) body.set('client_secret', formDecode(decoded.slice(colon + 1)));
    delete req.headers.authorization;
  }
  const refused = tokenRefusal(body, directory);
  if (refused) return refused;
  const scope = body.get('scope');
  if (body.get('grant_type') === 'refresh_token' && scope)
    body.set(
      'scope',
      scope
        .split(' ')
        .filter((s) => s !== 'offline_access')
        .join(' '),
    );
  handOver(req, body);
}

/**
 * Entra's refusals of a token request that oidc-provider would serve or answer otherwise:
 * - no client id (in the form or a Basic header): AADSTS900144, before anything else.
 * - a client assertion (a certificate): the directory registers none, so it is one Entra does not know
 *   for the app (700027); oidc-provider would say none was sent (7000218).
 * - v1.0's `resource` parameter (oidc-provider reads it as RFC 8707's): AADSTS901002.
 * - a code redeemed without `redirect_uri` (900144): oidc-provider lets a client with one registered
 *   redirect URI leave it out; Entra requires it (then compares it with the authorize request's, 500112).
 * - client credentials with a scope other than `<resource>/.default` (AADSTS1002012) or none (900144).
 * - scopes of two resources: an access token is for one (28000, 70011 for client credentials).
 */
function tokenRefusal(body: URLSearchParams, directory: Directory): EntraError | undefined {
  const clientId = body.get('client_id');
  if (!clientId) return missingParameter('client_id');
  if (body.has('client_assertion') && directory.application(clientId)) return unregisteredCertificate();
  if (body.has('resource')) return resourceParameter();
  const grantType = body.get('grant_type');
  if (grantType === 'authorization_code' && !body.get('redirect_uri'))
    return missingParameter('redirect_uri');
  const scope = body.get('scope') ?? '';
  const scopes = scope.split(' ').filter(Boolean);
  if (grantType === 'client_credentials') {
    if (scopes.length === 0) return missingParameter('scope');
    const other = scopes.find((value) => !value.endsWith('/.default'));
    if (other) return notDefaultScope(other);
  }
  const resourceOf = resourceNamer(directory);
  const resources = new Set(scopes.filter((value) => !OIDC_SCOPES.has(value)).map(resourceOf));
  if (resources.size > 1) return multipleResources(scope, grantType === 'client_credentials');
}

/** A PKCE verifier's form (RFC 7636), which a plain challenge has too. */
const PKCE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/**
 * Entra's authorize parameters that oidc-provider does not know, as ones it does; true when the query
 * changed. The account picker (`prompt=select_account`) is the sign-in page, where the person names the
 * account. A scope without offline_access is marked (NO_OFFLINE_ACCESS: no refresh token, as Entra),
 * whatever the client sent in that parameter. PKCE's plain method (Entra "supports both plain and S256" and takes a challenge without a
 * method as plain; oidc-provider only S256) becomes S256 of the challenge, which the same verifier
 * matches. A malformed challenge is left to oidc-provider's refusal.
 */
function asProviderAuthorize(query: URLSearchParams) {
  let changed = false;
  if (query.get('prompt') === 'select_account') {
    query.set('prompt', 'login');
    changed = true;
  }
  const marker = (query.get('scope') ?? '').split(' ').includes('offline_access') ? null : 'true';
  if (query.get(NO_OFFLINE_ACCESS) !== marker) {
    if (marker) query.set(NO_OFFLINE_ACCESS, marker);
    else query.delete(NO_OFFLINE_ACCESS);
    changed = true;
  }
  const challenge = query.get('code_challenge');
  if (
    challenge &&
    (query.get('code_challenge_method') ?? 'plain') === 'plain' &&
    PKCE_VERIFIER.test(challenge)
  ) {
    query.set('code_challenge', createHash('sha256').update(challenge).digest('base64url'));
    query.set('code_challenge_method', 'S256');
    changed = true;
  }
  return changed;
}

export function identityHandler(options: IdentityRoutesOptions) {
  const { tenantId, authority, issuer, jwksUri, identities, tokens } = options;
  const audienceOf = managedIdentityAudience(options.directory);

  /** Which app is asking: every candidate is compared, so timing does not reveal which one matched. */
  function callerOf(header: string | undefined): IdentitySecrets | undefined {
    let found: IdentitySecrets | undefined;
    for (const identity of Object.values(identities)) {
      if (header !== undefined && sameSecret(header, identity.header)) found = identity;
    }
    return found;
  }

  async function msiToken(req: IncomingMessage, res: ServerResponse, query: URLSearchParams) {
    const header = req.headers['x-identity-header'];
    const identity = callerOf(typeof header === 'string' ? header : undefined);
    if (!identity) return msiError(res, 401, 'Unauthorized: missing or invalid X-IDENTITY-HEADER.');
    if (query.get('api-version') !== MSI_API_VERSION) {
      return msiError(res, 400, `Unsupported api-version. Supported version is ${MSI_API_VERSION}.`);
    }
    const resource = query.get('resource');
    if (!resource) return msiError(res, 400, 'Required query parameter resource is missing.');
    // Apps here have only their system-assigned identity; asking for any other one finds nothing, and
    // App Service answers that with one text whichever identifier named it (azure-sdk-for-net#43691).
    const clientId = query.get('client_id');
    const principalId = query.get('principal_id') ?? query.get('object_id');
    if (
      (clientId && clientId !== identity.clientId) ||
      (principalId && principalId !== identity.principalId) ||
      query.has('mi_res_id')
    ) {
      return msiError(res, 400, 'Unable to load the proper Managed Identity.');
    }
    const target = audienceOf(resource);
    // App Service's answer, misspelling included, when Entra refuses the resource (it does not pass
    // Entra's AADSTS500011 on).
    if (!target) return msiError(res, 500, 'An unexpected error occured while fetching the AAD Token.');
    const token = await tokens.issue(identity, target.audience, target.version);
    sendJson(res, 200, {
      access_token: token.accessToken,
      // App Service sends expires_on as a string of epoch seconds.
      expires_on: String(token.expiresOn),
      resource: withoutDefault(resource),
      token_type: 'Bearer',
      client_id: identity.clientId,
    });
  }

  const discovery = openIdConfiguration({ authority, tenantId, issuer, jwksUri });

  const notFound = (res: ServerResponse, path: string) =>
    sendJson(res, 404, { error: 'not_found', error_description: `No resource at ${path}.` });
  const methodNotAllowed = (req: IncomingMessage, res: ServerResponse) =>
    sendJson(res, 405, {
      error: 'invalid_request',
      error_description: `Method ${req.method} is not allowed.`,
    });

  return async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'https://localhost');
    const path = url.pathname;
    if (path === '/msi/token')
      return req.method === 'GET' ? msiToken(req, res, url.searchParams) : methodNotAllowed(req, res);
    if (path === '/v1.0/me' || path === USERINFO_PATH) return options.graph(req, res);
    const tenant = path.split('/')[1] ?? '';
    if (tenant !== tenantId) {
      const entra = unknownTenant(tenant);
      return sendJson(res, entra.status, entraErrorBody(entra));
    }
    const rest = path.slice(tenant.length + 1);
    if (rest === ROUTES.jwks || rest === '/v2.0/.well-known/openid-configuration') {
      if (req.method !== 'GET') return methodNotAllowed(req, res);
      return sendJson(res, 200, rest === ROUTES.jwks ? tokens.publicJwks : discovery);
    }
    const login = /^\/login\/([\w-]+)$/.exec(rest);
    if (login?.[1]) return options.login(req, res, login[1]);
    if (!rest.startsWith('/oauth2/v2.0/')) return notFound(res, path);
    if (rest === ROUTES.token && req.method === 'POST') {
      const refused = await normaliseTokenRequest(req, options.directory);
      if (refused) return sendJson(res, refused.status, entraErrorBody(refused));
    } else if (rest === ROUTES.token && req.method !== 'OPTIONS') {
      // OPTIONS is CORS preflight, which oidc-provider answers.
      return sendPage(res, 400, 'Sign in', errorBody(postOnly(req.method ?? 'GET')));
    }
    if (rest === ROUTES.authorization) {
      // An authorize request is a query or, by POST, a form (OpenID Connect's two ways, both Entra's).
      const posted = req.method === 'POST' ? await readForm(req) : undefined;
      const params = posted ?? url.searchParams;
      if (params.has('resource')) {
        const refused = resourceParameter();
        return sendPage(res, refused.status, 'Sign in', errorBody(refused));
      }
      const changed = asProviderAuthorize(params);
      if (posted) handOver(req, posted);
      else if (changed) req.url = `${url.pathname}${url.search}`;
    }
    // Mounted under /<tenant>: oidc-provider derives its mount path from originalUrl minus url.
    Object.assign(req, { originalUrl: req.url, url: (req.url ?? '/').slice(tenant.length + 1) });
    await options.provider(req, res);
  };
}
