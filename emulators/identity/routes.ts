/**
 * The identity emulator's HTTP surface: the App Service managed-identity endpoint (`/msi/token`) and
 * the Entra-style discovery documents tokens are verified against.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../core/http.ts';
import type { IdentitySecrets } from '../core/secrets.ts';
import type { TokenIssuer } from './tokens.ts';

export interface IdentityRoutesOptions {
  tenantId: string;
  issuer: string;
  jwksUri: string;
  identities: Record<string, IdentitySecrets>;
  tokens: TokenIssuer;
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

/** Entra ID's OAuth error shape. */
const oauthError = (res: ServerResponse, status: number, error: string, description: string) =>
  sendJson(res, status, {
    error,
    error_description: description,
    error_codes: [],
    correlation_id: randomUUID(),
  });

export function identityHandler(options: IdentityRoutesOptions) {
  const { tenantId, issuer, jwksUri, identities, tokens } = options;
  const tenantPrefix = `/${tenantId}/`;

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
    // Apps here have only their system-assigned identity; asking for any other one finds nothing.
    const clientId = query.get('client_id');
    const principalId = query.get('principal_id') ?? query.get('object_id');
    if (
      (clientId && clientId !== identity.clientId) ||
      (principalId && principalId !== identity.principalId)
    ) {
      return msiError(res, 400, 'No managed identity found for the specified identifier.');
    }
    if (query.has('mi_res_id'))
      return msiError(res, 400, 'No managed identity found for the specified mi_res_id.');
    const token = await tokens.issue(identity, resource);
    sendJson(res, 200, {
      access_token: token.accessToken,
      // App Service sends expires_on as a string of epoch seconds.
      expires_on: String(token.expiresOn),
      resource: token.resource,
      token_type: 'Bearer',
      client_id: identity.clientId,
    });
  }

  function discovery(res: ServerResponse, path: string) {
    if (!path.startsWith(tenantPrefix)) {
      const tenant = path.split('/')[1] ?? '';
      return oauthError(
        res,
        400,
        'invalid_tenant',
        `AADSTS90002: Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`,
      );
    }
    const rest = path.slice(tenantPrefix.length);
    if (rest === 'discovery/v2.0/keys') return sendJson(res, 200, tokens.publicJwks);
    if (rest === 'v2.0/.well-known/openid-configuration') {
      return sendJson(res, 200, {
        issuer,
        jwks_uri: jwksUri,
        id_token_signing_alg_values_supported: ['RS256'],
        subject_types_supported: ['pairwise'],
        claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'oid', 'tid', 'azp', 'appid', 'idtyp'],
      });
    }
    sendJson(res, 404, { error: 'not_found', error_description: `No resource at ${path}.` });
  }

  return async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'https://localhost');
    if (req.method !== 'GET') {
      return sendJson(res, 405, {
        error: 'invalid_request',
        error_description: `Method ${req.method} is not allowed.`,
      });
    }
    if (url.pathname === '/msi/token') return msiToken(req, res, url.searchParams);
    discovery(res, url.pathname);
  };
}
