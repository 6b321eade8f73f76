/**
 * Entra ID's error answers. oidc-provider names what went wrong in its own words (`error` plus an
 * `error_detail`); msal-node and people read Entra's `AADSTSnnnnn: …` texts, so each is translated here.
 */
import { randomUUID } from 'node:crypto';

export interface EntraError {
  status: number;
  error: string;
  code: number;
  message: string;
}

export const redirectUriMismatch = (redirectUri: string, clientId: string): EntraError => ({
  status: 400,
  error: 'invalid_request',
  code: 50011,
  message: `The redirect URI '${redirectUri}' specified in the request does not match the redirect URIs configured for the application '${clientId}'. Make sure the redirect URI sent in the request matches one added to your application in the Azure portal. Navigate to https://aka.ms/redirectUriMismatchError to learn more about how to fix this.`,
});

export const unknownClient = (clientId: string, tenantId: string): EntraError => ({
  status: 400,
  error: 'unauthorized_client',
  code: 700016,
  message: `Application with identifier '${clientId}' was not found in the directory '${tenantId}'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant.`,
});

export const unknownTenant = (tenant: string): EntraError => ({
  status: 400,
  error: 'invalid_tenant',
  code: 90002,
  message: `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`,
});

/** v1.0's `resource` parameter, at the v2.0 endpoints (authorize and token). */
export const resourceParameter = (): EntraError => ({
  status: 400,
  error: 'invalid_request',
  code: 901002,
  message: "The 'resource' request parameter is not supported.",
});

export const missingParameter = (name: string): EntraError => ({
  status: 400,
  error: 'invalid_request',
  code: 900144,
  message: `The request body must contain the following parameter: '${name}'.`,
});

/** Client credentials take only `<resource>/.default` scopes. */
export const notDefaultScope = (scope: string): EntraError => ({
  status: 400,
  error: 'invalid_scope',
  code: 1002012,
  message: `The provided value for scope ${scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).`,
});

/** Another method than POST at the token endpoint: Entra answers its error page. */
export const postOnly = (method: string): EntraError => ({
  status: 400,
  error: 'invalid_request',
  code: 900561,
  message: `The endpoint only accepts POST requests. Received a ${method} request.`,
});

/** A client assertion signed by a certificate the app has not registered (the directory registers none). */
export const unregisteredCertificate = (): EntraError => ({
  status: 401,
  error: 'invalid_client',
  code: 700027,
  message:
    'The certificate with identifier used to sign the client assertion is not registered on application. [Reason - The key was not found.]',
});

/**
 * Scopes of more than one resource in one token request, quoting the scope parameter as sent. Entra
 * answers client credentials with 70011's text (azure-sdk-for-net#9076), the other grants with 28000.
 */
export const multipleResources = (scope: string, clientCredentials: boolean): EntraError =>
  clientCredentials
    ? {
        status: 400,
        error: 'invalid_scope',
        code: 70011,
        message: `The provided request must include a 'scope' input parameter. The provided value for the input parameter 'scope' is not valid. The scope ${scope} is not valid.`,
      }
    : {
        status: 400,
        error: 'invalid_scope',
        code: 28000,
        message: `Provided value for the input parameter scope is not valid because it contains more than one resource. Scope ${scope} is not valid.`,
      };

const fixed = (status: number, error: string, code: number, message: string): EntraError => ({
  status,
  error,
  code,
  message,
});

/**
 * A refresh token past its 90 days: Entra names its issue as .NET prints a time (seven decimals) and the
 * inactivity as a TimeSpan (`90.00:00:00`).
 */
const inactiveRefreshToken = (issuedAt: number) =>
  fixed(
    400,
    'invalid_grant',
    700082,
    `The refresh token has expired due to inactivity. The token was issued on ${new Date(issuedAt * 1000).toISOString().replace(/Z$/, '0000Z')} and was inactive for 90.00:00:00.`,
  );

/** What oidc-provider threw, by its `error` and `error_detail`/`error_description`. */
export interface ProviderError {
  error: string;
  error_description?: string;
  error_detail?: string;
  /** invalid_scope: the scopes refused. */
  scope?: string;
}

/** What the texts name: the request's client, tenant, redirect URI and resource. */
export interface ErrorSubject {
  clientId: string;
  tenantId: string;
  redirectUri: string;
  resource: string;
  /** The authorize request's response_type, as sent. */
  responseType: string;
  /** An expired refresh token's issue (seconds since the epoch): Entra's AADSTS700082 names it. */
  refreshTokenIssuedAt?: number;
}

/**
 * The implicit flow (an access or ID token from the authorize endpoint), which the app registrations
 * here do not enable: Entra names the first response type the app lacks.
 */
const implicitNotEnabled = (responseType: string): EntraError => {
  const types = responseType.split(' ');
  const [code, lacking] = types.includes('token') ? [700051, 'token'] : [700054, 'id_token'];
  return fixed(
    400,
    'unsupported_response_type',
    code,
    `response_type '${lacking}' is not enabled for the application.`,
  );
};

/** The Entra answer for an oidc-provider error. */
export function toEntraError(thrown: ProviderError, subject: ErrorSubject): EntraError {
  const { clientId, tenantId } = subject;
  const detail = `${thrown.error_detail ?? ''} ${thrown.error_description ?? ''}`;
  switch (thrown.error) {
    case 'invalid_client':
      if (/not found/.test(thrown.error_detail ?? '')) return unknownClient(clientId, tenantId);
      if (/mechanism/.test(thrown.error_detail ?? ''))
        return fixed(
          401,
          'invalid_client',
          7000218,
          "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.",
        );
      return fixed(
        401,
        'invalid_client',
        7000215,
        `Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${clientId}'.`,
      );
    case 'invalid_grant':
      if (/code_verifier|PKCE/.test(detail))
        return fixed(
          400,
          'invalid_grant',
          501481,
          'The Code_Verifier does not match the code_challenge supplied in the authorization request.',
        );
      if (/already consumed/.test(detail))
        return fixed(
          400,
          'invalid_grant',
          54005,
          'OAuth2 Authorization code was already redeemed, please retry with a new valid code or use an existing refresh token.',
        );
      if (/client mismatch/.test(detail))
        return fixed(400, 'invalid_grant', 700007, 'The grant was issued for a different client id.');
      if (/redirect_uri mismatch/.test(detail))
        return fixed(
          400,
          'invalid_grant',
          500112,
          'The reply address does not match the reply address provided when requesting Authorization code.',
        );
      if (/refresh token is expired/.test(detail) && subject.refreshTokenIssuedAt !== undefined)
        return inactiveRefreshToken(subject.refreshTokenIssuedAt);
      if (/expired/.test(detail))
        return fixed(
          400,
          'invalid_grant',
          70008,
          'The provided authorization code or refresh token has expired due to inactivity. Send a new interactive authorization request for this user and resource.',
        );
      return fixed(400, 'invalid_grant', 9002313, 'Invalid request. Request is malformed or invalid.');
    case 'invalid_redirect_uri':
      return redirectUriMismatch(subject.redirectUri, clientId);
    case 'unsupported_grant_type':
      return fixed(400, 'unsupported_grant_type', 70003, 'The app requested an unsupported grant type.');
    case 'unauthorized_client':
      return fixed(
        400,
        'unauthorized_client',
        700025,
        'Client is not allowed to use this grant type or response type.',
      );
    case 'invalid_target':
      return fixed(
        400,
        'invalid_resource',
        500011,
        `The resource principal named ${subject.resource} was not found in the tenant named ${tenantId}. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You might have sent your authentication request to the wrong tenant.`,
      );
    case 'invalid_scope':
      // Worded in full where it was thrown (resources.ts), which knows the app's name.
      if (/that doesn't exist on the resource/.test(thrown.error_description ?? ''))
        return fixed(400, 'invalid_client', 650053, thrown.error_description ?? '');
      return fixed(
        400,
        'invalid_scope',
        70011,
        `The provided value for the input parameter 'scope' is not valid.${thrown.scope ? ` The scope ${thrown.scope} is not valid.` : ''}`,
      );
    case 'unsupported_response_type':
      if (subject.responseType) return implicitNotEnabled(subject.responseType);
      return fixed(
        400,
        'unsupported_response_type',
        900144,
        "The request body must contain the following parameter: 'response_type'.",
      );
    case 'invalid_request': {
      if (/response_type is not allowed/.test(detail)) return implicitNotEnabled(subject.responseType);
      const missing = /missing required parameter.? '?([\w]+)/.exec(detail)?.[1];
      if (missing)
        return fixed(
          400,
          'invalid_request',
          900144,
          `The request body must contain the following parameter: '${missing}'.`,
        );
      if (/code_challenge|PKCE/.test(detail))
        return fixed(
          400,
          'invalid_request',
          9002325,
          'Proof Key for Code Exchange is required for cross-origin authorization code redemption.',
        );
      if (/post_logout_redirect_uri/.test(detail))
        return fixed(
          400,
          'invalid_request',
          50011,
          `The post-logout redirect URI specified in the request does not match the redirect URIs configured for the application '${clientId}'.`,
        );
      return fixed(400, 'invalid_request', 90014, 'Request is malformed or invalid.');
    }
    case 'login_required':
      return fixed(
        400,
        'login_required',
        50058,
        'A silent sign-in request was sent but no user is signed in.',
      );
    case 'server_error':
      return fixed(
        500,
        'server_error',
        50000,
        'There was an error issuing a token or an issue with our sign-in service.',
      );
    default:
      return fixed(400, thrown.error, 90014, 'Request is malformed or invalid.');
  }
}

/** Entra's JSON error body: the AADSTS code leads the description, followed by the trace lines. */
export function entraErrorBody(entra: EntraError) {
  const traceId = randomUUID();
  const correlationId = randomUUID();
  const timestamp = `${new Date().toISOString().slice(0, 19).replace('T', ' ')}Z`;
  return {
    error: entra.error,
    error_description: `AADSTS${entra.code}: ${entra.message} Trace ID: ${traceId} Correlation ID: ${correlationId} Timestamp: ${timestamp}`,
    error_codes: [entra.code],
    timestamp,
    trace_id: traceId,
    correlation_id: correlationId,
    error_uri: `https://login.microsoftonline.com/error?code=${entra.code}`,
  };
}
