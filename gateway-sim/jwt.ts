/**
 * validate-jwt against the identity provider: its OpenID configuration names the key set (JWKS), fetched
 * and cached as jose's remote key set does (refetching for an unknown key id), with Node's own client. Times (exp, nbf) are checked by real time,
 * not the stack clock: the identity provider stamps its tokens by real time and the SDKs caching them
 * renew them by real time, so a moved stack clock must not refuse a token its holder still sends.
 * No clock skew is allowed (the policy's clock-skew attribute, 0 seconds by default, is not read here).
 */
import { type JWTVerifyGetKey, jwtVerify } from 'jose';
import { getJson } from '../emulators/core/http.ts';
import { remoteKeySet } from '../emulators/core/jwks.ts';

export function createJwtValidator() {
  const keySets = new Map<string, Promise<JWTVerifyGetKey>>();
  const keySet = (configUrl: string) => {
    let found = keySets.get(configUrl);
    if (!found) {
      found = (async () => {
        const { status, body } = await getJson(configUrl);
        if (status < 200 || status > 299) throw new Error(`${configUrl} answered ${status}`);
        const { jwks_uri } = (body ?? {}) as { jwks_uri?: string };
        if (!jwks_uri) throw new Error(`${configUrl} names no jwks_uri`);
        return remoteKeySet(jwks_uri);
      })();
      // A provider that was down is asked again next time.
      found.catch(() => keySets.delete(configUrl));
      keySets.set(configUrl, found);
    }
    return found;
  };

  /** Resolves when the token is valid for one of the configurations; otherwise rejects with why. */
  return async function validate(
    token: string,
    rule: { openIdConfigUrls: string[]; audiences: string[]; issuers: string[] },
  ): Promise<void> {
    let lastError: unknown;
    for (const url of rule.openIdConfigUrls) {
      try {
        await jwtVerify(token, await keySet(url), {
          audience: rule.audiences.length ? rule.audiences : undefined,
          issuer: rule.issuers.length ? rule.issuers : undefined,
        });
        return;
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  };
}
export type JwtValidator = ReturnType<typeof createJwtValidator>;

/** APIM's LastError.Reason for a token it refuses (its error-handling reference's validate-jwt rows). */
export function refusalReason(error: unknown): string {
  const { code, claim } = error as { code?: string; claim?: string };
  if (code === 'ERR_JWT_EXPIRED') return 'TokenExpired';
  if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') return 'TokenSignatureInvalid';
  if (code === 'ERR_JWKS_NO_MATCHING_KEY') return 'TokenSignatureKeyNotFound';
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && claim === 'aud') return 'TokenAudienceNotAllowed';
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && claim === 'iss') return 'TokenIssuerNotAllowed';
  return 'JwtInvalid';
}
