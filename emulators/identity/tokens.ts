/** The token service: signs access tokens the way Entra ID does for a managed identity. */
import { randomUUID } from 'node:crypto';
import { importJWK, type JWK, SignJWT } from 'jose';
import type { IdentitySecrets } from '../core/secrets.ts';

/** Managed-identity tokens live 24 hours. */
const LIFETIME_SECONDS = 24 * 3600;

export interface IssuedToken {
  accessToken: string;
  /** Seconds since the epoch, real time. */
  expiresOn: number;
}

export interface TokenIssuer {
  /** A token whose `aud` is `audience` (resources.ts, managedIdentityAudience). */
  issue(identity: IdentitySecrets, audience: string): Promise<IssuedToken>;
  /** The public half of the signing key, as the JWKS endpoint serves it. */
  readonly publicJwks: { keys: JWK[] };
}

export async function createTokenIssuer(options: {
  signingKey: JWK;
  issuer: string;
  tenantId: string;
}): Promise<TokenIssuer> {
  const { signingKey, issuer, tenantId } = options;
  if (!signingKey.kid) throw new Error('the signing key has no kid');
  const key = await importJWK(signingKey, 'RS256');
  const { kty, n, e, kid } = signingKey;
  return {
    publicJwks: { keys: [{ kty, n, e, kid, alg: 'RS256', use: 'sig' }] },
    async issue(identity, audience) {
      // Real time, not the stack clock: the SDK's token cache decides when to refresh by real time.
      const now = Math.floor(Date.now() / 1000);
      const expiresOn = now + LIFETIME_SECONDS;
      const accessToken = await new SignJWT({
        tid: tenantId,
        oid: identity.principalId,
        appid: identity.clientId,
        azp: identity.clientId,
        idtyp: 'app',
        uti: randomUUID(),
        ver: '2.0',
      })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: signingKey.kid })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject(identity.principalId)
        .setIssuedAt(now)
        .setNotBefore(now)
        .setExpirationTime(expiresOn)
        .sign(key);
      return { accessToken, expiresOn };
    },
  };
}
