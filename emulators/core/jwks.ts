/**
 * A remote JSON Web Key Set, as the emulators' token verifier and the gateway's validate-jwt read it.
 */
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { getJson } from './http.ts';

/** jose's createRemoteJWKSet defaults: keys kept 10 minutes, refetched for an unknown kid at most every 30 s. */
const JWKS_MAX_AGE_MS = 600_000;
const JWKS_COOLDOWN_MS = 30_000;
const JWKS_TIMEOUT_MS = 5_000;

/**
 * The key set at `jwksUri`, fetched at the first token and kept as jose's createRemoteJWKSet keeps it,
 * but with Node's own HTTP client: jose fetches with `fetch`, whose first call loads undici (~45 ms of
 * CPU and a few MB) in the vault and Cosmos before they are ready (the apps' first secrets and reads), and
 * in the gateway at its first validate-jwt.
 */
export function remoteKeySet(jwksUri: string): JWTVerifyGetKey {
  let local: JWTVerifyGetKey | undefined;
  let fetchedAt = 0;
  let pending: Promise<JWTVerifyGetKey> | undefined;
  const reload = () => {
    pending ??= getJson(jwksUri, {}, JWKS_TIMEOUT_MS)
      .then(({ status, body }) => {
        if (status !== 200) throw new Error(`the key set answered ${status}`);
        local = createLocalJWKSet(body as JSONWebKeySet);
        fetchedAt = Date.now();
        return local;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };
  return async (header, token) => {
    const keys = local && Date.now() - fetchedAt < JWKS_MAX_AGE_MS ? local : await reload();
    try {
      return await keys(header, token);
    } catch (error) {
      // A key the set lacks may be a new one (the provider rotated): fetch again, but not too often.
      if (!(error instanceof errors.JWKSNoMatchingKey) || Date.now() - fetchedAt < JWKS_COOLDOWN_MS)
        throw error;
      return (await reload())(header, token);
    }
  };
}
