/**
 * Entra's OpenID discovery document for the tenant, written out rather than oidc-provider's: this is the
 * document msal-node reads (it needs the endpoints and an issuer on the authority's own host), and
 * oidc-provider's would advertise features Entra does not have.
 */
import { USERINFO_PATH } from './graph.ts';
import { ROUTES } from './provider.ts';

export function openIdConfiguration(options: {
  authority: string;
  tenantId: string;
  issuer: string;
  jwksUri: string;
}) {
  const { authority, tenantId, issuer, jwksUri } = options;
  const tenantUrl = `${authority}/${tenantId}`;
  return {
    token_endpoint: `${tenantUrl}${ROUTES.token}`,
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    jwks_uri: jwksUri,
    response_modes_supported: ['query', 'fragment', 'form_post'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    response_types_supported: ['code'],
    scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
    issuer,
    request_uri_parameter_supported: false,
    authorization_endpoint: `${tenantUrl}${ROUTES.authorization}`,
    http_logout_supported: true,
    frontchannel_logout_supported: false,
    end_session_endpoint: `${tenantUrl}${ROUTES.end_session}`,
    // Entra's is Graph's (https://graph.microsoft.com/oidc/userinfo); Graph is served on this host.
    userinfo_endpoint: `${authority}${USERINFO_PATH}`,
    claims_supported: [
      'sub',
      'iss',
      'aud',
      'exp',
      'iat',
      'nbf',
      'auth_time',
      'nonce',
      'oid',
      'tid',
      'ver',
      'name',
      'preferred_username',
      'email',
      'azp',
      'appid',
      'idtyp',
      'scp',
    ],
    tenant_region_scope: null,
    cloud_instance_name: 'microsoftonline.com',
    msgraph_host: new URL(authority).host,
  };
}
