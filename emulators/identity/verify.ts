/**
 * Checks bearer tokens issued by the identity emulator. Other emulators (vault, Cosmos) import this to
 * learn who is calling; they decide themselves what that caller may do.
 */
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JSONWebKeySet,
  jwtVerify,
} from 'jose';
import { remoteKeySet } from '../core/jwks.ts';

export type TokenErrorReason =
  | 'missing'
  | 'malformed'
  | 'signature'
  | 'expired'
  | 'not-yet-valid'
  | 'issuer'
  | 'audience'
  /** The JWKS could not be fetched: the identity emulator is down or unreachable. */
  | 'unavailable';

export class TokenError extends Error {
  constructor(
    readonly reason: TokenErrorReason,
    message: string,
    /** The offending claim's value (issuer or audience) when the reason is `issuer` or `audience`. */
    readonly found?: string,
  ) {
    super(message);
    this.name = 'TokenError';
  }
}

export interface VerifiedCaller {
  /** The `oid` claim: the identity's object (principal) id, what access policies name. */
  principalId: string;
  tenantId: string;
  /** The `iss` claim: the tenant's v1.0 or v2.0 issuer. */
  issuer: string;
  /** The `appid`/`azp` claim. */
  clientId: string;
  /** The `exp` claim, in milliseconds since the epoch (real time). */
  expiresOn: number;
  /** The delegated permissions (`scp`) of a user's token; empty for an app's own token. */
  scopes: string[];
}

export interface TokenVerifier {
  /**
   * Verifies an Authorization header value (`Bearer <jwt>` or the bare JWT) against the identity
   * emulator's keys, its tenant's issuers, one of `audiences`, and real time. Throws a TokenError.
   */
  verify(authorization: string | undefined, audiences: string[]): Promise<VerifiedCaller>;
}

/** Entra's v1.0 issuer of a tenant: what its tokens for Azure's own resources carry (tokens.ts). */
export const v1Issuer = (tenantId: string) => `https://sts.windows.net/${tenantId}/`;

/**
 * The issuers of the tenant whose v2.0 issuer (`<authority>/<tenant>/v2.0`) is `issuer`: v1.0's and
 * v2.0's. Azure's services (Key Vault, Storage, Cosmos DB, Event Hubs) accept both of their tenant's.
 */
export function tenantIssuers(issuer: string): string[] {
  const tenant = /\/([^/]+)\/v2\.0$/.exec(issuer)?.[1];
  return tenant ? [v1Issuer(tenant), issuer] : [issuer];
}

/** Entra ID's validators allow five minutes of clock skew; so do we. */
const CLOCK_SKEW_SECONDS = 300;

/** `keys` verifies with a key set at hand (the identity emulator's own) instead of fetching `jwksUri`. */
export function createTokenVerifier(options: {
  /** The tenant's v2.0 issuer; its v1.0 issuer is accepted too (tenantIssuers). */
  issuer: string;
  jwksUri: string;
  keys?: JSONWebKeySet;
}): TokenVerifier {
  const jwks = options.keys ? createLocalJWKSet(options.keys) : remoteKeySet(options.jwksUri);
  const issuers = tenantIssuers(options.issuer);
  return {
    async verify(authorization, audiences) {
      const token = authorization?.trim().replace(/^Bearer(\s+|$)/i, '');
      if (!token) throw new TokenError('missing', 'no bearer token');
      try {
        // Decoding first tells a malformed token apart from a failure to fetch the keys.
        decodeProtectedHeader(token);
        decodeJwt(token);
      } catch {
        throw new TokenError('malformed', 'token is not a well-formed JWT');
      }
      try {
        const { payload } = await jwtVerify(token, jwks, {
          issuer: issuers,
          audience: audiences,
          algorithms: ['RS256'],
          // Expiry is judged by real time (jose's default), not the stack clock: the SDK's token cache
          // refreshes by real time, so moving the stack clock must not expire the tokens it holds.
          clockTolerance: CLOCK_SKEW_SECONDS,
          requiredClaims: ['exp', 'oid', 'tid'],
        });
        const clientId = payload.appid ?? payload.azp;
        if (
          typeof payload.oid !== 'string' ||
          typeof payload.tid !== 'string' ||
          typeof clientId !== 'string'
        ) {
          throw new TokenError('malformed', 'token lacks oid, tid or appid');
        }
        return {
          principalId: payload.oid,
          tenantId: payload.tid,
          issuer: String(payload.iss),
          clientId,
          expiresOn: (payload.exp as number) * 1000,
          scopes: typeof payload.scp === 'string' ? payload.scp.split(' ').filter(Boolean) : [],
        };
      } catch (error) {
        throw toTokenError(error);
      }
    },
  };
}

function toTokenError(error: unknown): TokenError {
  if (error instanceof TokenError) return error;
  if (error instanceof errors.JWTExpired) return new TokenError('expired', 'token is expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    const found = error.payload[error.claim];
    const shown = Array.isArray(found) ? found.join(', ') : String(found);
    if (error.claim === 'aud') return new TokenError('audience', `invalid audience ${shown}`, shown);
    if (error.claim === 'iss') return new TokenError('issuer', `invalid issuer ${shown}`, shown);
    if (error.claim === 'nbf' || error.claim === 'iat')
      return new TokenError('not-yet-valid', 'token is not yet valid');
    return new TokenError('malformed', error.message);
  }
  if (
    error instanceof errors.JWSSignatureVerificationFailed ||
    error instanceof errors.JWKSNoMatchingKey ||
    error instanceof errors.JOSEAlgNotAllowed
  ) {
    return new TokenError('signature', 'token signature is not valid');
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) {
    return new TokenError('malformed', 'token is not a well-formed JWT');
  }
  // What is left is the key set itself: fetch failed, timed out, or answered something else than a JWKS.
  return new TokenError('unavailable', 'the identity provider keys could not be fetched');
}
