/**
 * Microsoft Graph's `GET /v1.0/me`: the signed-in user's profile, for a user's access token for Graph
 * from this provider with `User.Read`. Errors in Graph's shape (`{ error: { code, message, innerError } }`).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../core/http.ts';
import type { Directory } from './directory.ts';
import { GRAPH_APP_ID, GRAPH_RESOURCE } from './resources.ts';
import { TokenError, type TokenVerifier } from './verify.ts';

function graphError(res: ServerResponse, status: number, code: string, message: string) {
  const requestId = randomUUID();
  sendJson(
    res,
    status,
    {
      error: {
        code,
        message,
        innerError: {
          date: new Date().toISOString().slice(0, 19),
          'request-id': requestId,
          'client-request-id': requestId,
        },
      },
    },
    {
      'request-id': requestId,
      ...(status === 401 && {
        'www-authenticate': `Bearer realm="", authorization_uri="https://login.microsoftonline.com/common/oauth2/authorize", client_id="${GRAPH_APP_ID}"`,
      }),
    },
  );
}

/** Graph's texts for a token it cannot take. */
const TOKEN_MESSAGES: Partial<Record<TokenError['reason'], string>> = {
  missing: 'Access token is empty.',
  malformed: 'IDX14100: JWT is not well formed, there are no dots (.).',
  expired: 'Lifetime validation failed, the token is expired.',
  audience: 'Access token validation failure. Invalid audience.',
  issuer: 'Access token validation failure. Invalid issuer.',
};

/** OpenID Connect's UserInfo, which Entra's discovery document places on Graph (`/oidc/userinfo`). */
export const USERINFO_PATH = '/oidc/userinfo';

type User = NonNullable<ReturnType<Directory['userById']>>;

/** `GET /v1.0/me`: the profile, for a token with one of Graph's User.* permissions. */
function me(res: ServerResponse, user: User, scopes: string[]) {
  if (!scopes.some((scope) => /^User\.(Read|ReadWrite|ReadBasic\.All|Read\.All)$/.test(scope)))
    return graphError(
      res,
      403,
      'Authorization_RequestDenied',
      'Insufficient privileges to complete the operation.',
    );
  sendJson(res, 200, {
    '@odata.context': 'https://graph.microsoft.com/v1.0/$metadata#users/$entity',
    businessPhones: [],
    displayName: user.displayName,
    givenName: null,
    jobTitle: null,
    mail: user.mail ?? null,
    mobilePhone: null,
    officeLocation: null,
    preferredLanguage: null,
    surname: null,
    userPrincipalName: user.userPrincipalName,
    id: user.objectId,
  });
}

/**
 * UserInfo (GET or POST): the ID token's `sub` (here the object id), `name`, and `email` when the user
 * has one. Entra's `given_name`/`family_name` are left out as the users have none, and `picture` (a
 * Graph photo URL) as no photo is served.
 */
function userInfo(res: ServerResponse, user: User) {
  sendJson(res, 200, {
    sub: user.objectId,
    name: user.displayName,
    ...(user.mail && { email: user.mail }),
  });
}

export function graphHandler(directory: Directory, verifier: TokenVerifier) {
  return async (req: IncomingMessage, res: ServerResponse) => {
    const isUserInfo = new URL(req.url ?? '/', 'https://localhost').pathname === USERINFO_PATH;
    if (req.method !== 'GET' && !(isUserInfo && req.method === 'POST'))
      return graphError(
        res,
        405,
        'Request_BadRequest',
        `Specified HTTP method is not allowed for the request target.`,
      );
    let caller: Awaited<ReturnType<TokenVerifier['verify']>>;
    try {
      caller = await verifier.verify(req.headers.authorization, [GRAPH_APP_ID, GRAPH_RESOURCE]);
    } catch (error) {
      if (!(error instanceof TokenError)) throw error;
      const message = TOKEN_MESSAGES[error.reason] ?? 'Access token validation failure.';
      return graphError(res, 401, 'InvalidAuthenticationToken', message);
    }
    const user = directory.userById(caller.principalId);
    if (caller.scopes.length === 0 || !user)
      return graphError(
        res,
        400,
        'BadRequest',
        `${isUserInfo ? USERINFO_PATH : '/me'} request is only valid with delegated authentication flow.`,
      );
    return isUserInfo ? userInfo(res, user) : me(res, user, caller.scopes);
  };
}
