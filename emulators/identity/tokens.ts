/** The token service: signs access tokens the way Entra ID does for a managed identity. */
import { randomBytes } from 'node:crypto';
import { importJWK, type JWK, SignJWT } from 'jose';
import { RESOURCE_GROUP, SUBSCRIPTION_ID } from '../core/arm.ts';
import type { IdentitySecrets } from '../core/secrets.ts';
import { v1Issuer } from './verify.ts';

/** Managed-identity tokens live 24 hours. */
const LIFETIME_SECONDS = 24 * 3600;

/**
 * The access token version Entra issues for a resource: the one its resource app asks for (v1.0 unless
 * it is registered with requestedAccessTokenVersion 2), whichever endpoint the client used.
 */
export type TokenVersion = '1.0' | '2.0';

export interface IssuedToken {
  accessToken: string;
  /** Seconds since the epoch, real time. */
  expiresOn: number;
}

export interface TokenIssuer {
  /** A token whose `aud` is `audience` (resources.ts, managedIdentityAudience). */
  issue(identity: IdentitySecrets, audience: string, version: TokenVersion): Promise<IssuedToken>;
  /** The public half of the signing key, as the JWKS endpoint serves it. */
  readonly publicJwks: { keys: JWK[] };
}

/**
 * The claims that make an app's token Entra's v1.0 or v2.0 one. `acr` is how the app proved itself:
 * `1` a secret, `2` a certificate (what a managed identity uses).
 */
export function versionClaims(
  version: TokenVersion,
  tenant: { tenantId: string; issuer: string },
  clientId: string,
  acr: '1' | '2',
) {
  const sts = v1Issuer(tenant.tenantId);
  return version === '1.0'
    ? { iss: sts, idp: sts, appid: clientId, appidacr: acr, ver: '1.0' }
    : { iss: tenant.issuer, azp: clientId, azpacr: acr, ver: '2.0' };
}

/** The App Service site of a system-assigned identity, in the form Entra's `xms_mirid` names it. */
const siteResourceId = (site: string) =>
  `/subscriptions/${SUBSCRIPTION_ID}/resourcegroups/${RESOURCE_GROUP}/providers/Microsoft.Web/sites/${site}`;

/** Entra's `uti` and `rh` are opaque; these have their form (22 base64url characters; `0.<…>.`). */
const opaque = (bytes: number) => randomBytes(bytes).toString('base64url');
export const opaqueClaims = () => ({ rh: `0.${opaque(36)}.`, uti: opaque(16) });

export async function createTokenIssuer(options: {
  signingKey: JWK;
  /** The tenant's v2.0 issuer. */
  issuer: string;
  tenantId: string;
  /** The site (apps.json name) each identity, by client id, is the system-assigned identity of. */
  sites: Record<string, string>;
}): Promise<TokenIssuer> {
  const { signingKey, issuer, tenantId, sites } = options;
  if (!signingKey.kid) throw new Error('the signing key has no kid');
  const key = await importJWK(signingKey, 'RS256');
  const { kty, n, e, kid } = signingKey;
  return {
    publicJwks: { keys: [{ kty, n, e, kid, alg: 'RS256', use: 'sig' }] },
    async issue(identity, audience, version) {
      // Real time, not the stack clock: the SDK's token cache decides when to refresh by real time.
      const now = Math.floor(Date.now() / 1000);
      const expiresOn = now + LIFETIME_SECONDS;
      const shaped = versionClaims(version, { tenantId, issuer }, identity.clientId, '2');
      const site = sites[identity.clientId];
      const accessToken = await new SignJWT({
        ...shaped,
        tid: tenantId,
        oid: identity.principalId,
        idtyp: 'app',
        ...opaqueClaims(),
        ...(site && { xms_mirid: siteResourceId(site) }),
      })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: signingKey.kid })
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
