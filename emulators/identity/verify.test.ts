import { createServer } from 'node:http';
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningEmulator } from '../core/emulator.ts';
import { close, listen } from '../core/http.ts';
import { startEmulator, type TestContext, testContext, testDataDir } from '../core/testing.ts';
import identity from './index.ts';
import { createTokenVerifier, type TokenErrorReason, type TokenVerifier } from './verify.ts';

const data = testDataDir();
let context: TestContext;
let running: RunningEmulator;
let verifier: TokenVerifier;

/** A token as an app would get it from the managed-identity endpoint. */
async function tokenFor(app: string, resource: string): Promise<string> {
  const header = context.secrets.identities[app]?.header ?? '';
  const url = `${running.endpoints.identityEndpoint}?api-version=2019-08-01&resource=${encodeURIComponent(resource)}`;
  const response = await fetch(url, { headers: { 'X-IDENTITY-HEADER': header } });
  return (await response.json()).access_token;
}

async function reasonOf(promise: Promise<unknown>): Promise<TokenErrorReason | 'accepted'> {
  return promise.then(
    () => 'accepted' as const,
    (error: { reason: TokenErrorReason }) => error.reason,
  );
}

beforeAll(async () => {
  context = await testContext(data.dir, { inMemory: true });
  running = await startEmulator(identity, { port: 0 }, context);
  const { issuer, jwksUri } = running.endpoints;
  verifier = createTokenVerifier({ issuer: issuer ?? '', jwksUri: jwksUri ?? '' });
});
afterAll(async () => {
  await running?.stop();
  data.remove();
});

describe('createTokenVerifier', () => {
  it('names the caller of a valid token, with or without the Bearer prefix', async () => {
    const token = await tokenFor('webApp', 'https://vault.azure.net/.default');
    const web = context.secrets.identities.webApp;
    const expected = {
      principalId: web?.principalId,
      tenantId: context.secrets.tenantId,
      // Entra's v1.0 issuer: a token for an Azure resource (tokens.ts).
      issuer: `https://sts.windows.net/${context.secrets.tenantId}/`,
      clientId: web?.clientId,
      // The token's own expiry, which callers keep their grant to (24 h away, to the second).
      expiresOn: expect.any(Number),
      // A managed identity's token is the app's own: no delegated permissions.
      scopes: [],
    };
    const { expiresOn } = await verifier.verify(token, ['https://vault.azure.net']);
    expect(expiresOn % 1000).toBe(0);
    expect(Math.abs(expiresOn - Date.now() - 24 * 3600_000)).toBeLessThan(600_000);
    expect(await verifier.verify(`Bearer ${token}`, ['https://vault.azure.net'])).toEqual(expected);
    expect(await verifier.verify(token, ['https://other', 'https://vault.azure.net'])).toEqual(expected);
  });

  it('says why a token is refused', async () => {
    const token = await tokenFor('functionApp', 'https://vault.azure.net');
    const [head, body, signature] = token.split('.');
    const flipped = `${signature?.startsWith('A') ? 'B' : 'A'}${signature?.slice(1)}`;
    expect(await reasonOf(verifier.verify(undefined, ['https://vault.azure.net']))).toBe('missing');
    expect(await reasonOf(verifier.verify('Bearer ', ['https://vault.azure.net']))).toBe('missing');
    expect(await reasonOf(verifier.verify('Bearer not.a.jwt', ['https://vault.azure.net']))).toBe(
      'malformed',
    );
    expect(await reasonOf(verifier.verify(`${head}.${body}.${flipped}`, ['https://vault.azure.net']))).toBe(
      'signature',
    );
    const wrong = verifier.verify(token, ['https://cosmos.azure.com']);
    await expect(wrong).rejects.toMatchObject({ reason: 'audience', found: 'https://vault.azure.net' });
  });

  it('refuses a token signed by another key or for another issuer', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const kid = context.secrets.signingKey.kid ?? '';
    const now = Math.floor(Date.now() / 1000);
    const forged = await new SignJWT({ oid: 'x', tid: context.secrets.tenantId, appid: 'y' })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(running.endpoints.issuer ?? '')
      .setAudience('https://vault.azure.net')
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(privateKey);
    expect(await reasonOf(verifier.verify(forged, ['https://vault.azure.net']))).toBe('signature');
    const otherIssuer = createTokenVerifier({
      issuer: 'https://login.microsoftonline.com/other/v2.0',
      jwksUri: running.endpoints.jwksUri ?? '',
    });
    const token = await tokenFor('functionApp', 'https://vault.azure.net');
    expect(await reasonOf(otherIssuer.verify(token, ['https://vault.azure.net']))).toBe('issuer');
  });

  it("accepts the tenant's v1.0 issuer (sts.windows.net) as well as its v2.0 one, as Azure's services do", async () => {
    const key = await importJWK(context.secrets.signingKey, 'RS256');
    const { kid } = context.secrets.signingKey;
    const app = context.secrets.identities.functionApp;
    const now = Math.floor(Date.now() / 1000);
    const issuedBy = (issuer: string) =>
      new SignJWT({ oid: app?.principalId, tid: context.secrets.tenantId, appid: app?.clientId, ver: '1.0' })
        .setProtectedHeader({ alg: 'RS256', kid })
        .setIssuer(issuer)
        .setAudience('https://vault.azure.net')
        .setIssuedAt(now)
        .setExpirationTime(now + 3600)
        .sign(key);
    const v1 = await issuedBy(`https://sts.windows.net/${context.secrets.tenantId}/`);
    expect(await reasonOf(verifier.verify(v1, ['https://vault.azure.net']))).toBe('accepted');
    const otherTenant = await issuedBy('https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/');
    await expect(verifier.verify(otherTenant, ['https://vault.azure.net'])).rejects.toMatchObject({
      reason: 'issuer',
      found: 'https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/',
    });
  });

  it('judges expiry by real time, as the SDK caching the token does', async () => {
    const key = await importJWK(context.secrets.signingKey, 'RS256');
    const { kid } = context.secrets.signingKey;
    const app = context.secrets.identities.functionApp;
    // Expired an hour ago in real time, well past the five minutes of skew allowed.
    const exp = Math.floor(Date.now() / 1000) - 3600;
    const expired = await new SignJWT({
      oid: app?.principalId,
      tid: context.secrets.tenantId,
      appid: app?.clientId,
    })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(running.endpoints.issuer ?? '')
      .setAudience('https://storage.azure.com')
      .setIssuedAt(exp - 24 * 3600)
      .setExpirationTime(exp)
      .sign(key);
    expect(await reasonOf(verifier.verify(expired, ['https://storage.azure.com']))).toBe('expired');

    const fresh = await tokenFor('functionApp', 'https://storage.azure.com');
    context.clock.advance(25 * 3600_000);
    expect(await reasonOf(verifier.verify(fresh, ['https://storage.azure.com']))).toBe('accepted');
    // Tokens issued after the move are stamped with real time too, so they are valid now.
    const later = await tokenFor('functionApp', 'https://storage.azure.com');
    expect(await reasonOf(verifier.verify(later, ['https://storage.azure.com']))).toBe('accepted');
  });

  it('reports an unreachable key set as unavailable', async () => {
    const token = await tokenFor('functionApp', 'https://vault.azure.net');
    const nowhere = createTokenVerifier({
      issuer: running.endpoints.issuer ?? '',
      jwksUri: 'https://127.0.0.1:1/keys',
    });
    expect(await reasonOf(nowhere.verify(token, ['https://vault.azure.net']))).toBe('unavailable');
  });

  // fetch's first call loads undici (~45 ms of CPU): the vault and Cosmos verify the apps' first tokens
  // before the stack is ready, and need nothing else of it. Run with fetch removed, the key set still loads.
  it('fetches the key set without fetch', async () => {
    const token = await tokenFor('functionApp', 'https://vault.azure.net');
    const { issuer, jwksUri } = running.endpoints;
    const fresh = createTokenVerifier({ issuer: issuer ?? '', jwksUri: jwksUri ?? '' });
    vi.stubGlobal('fetch', () => Promise.reject(new Error('fetch is not to be used')));
    try {
      expect(await reasonOf(fresh.verify(token, ['https://vault.azure.net']))).toBe('accepted');
    } finally {
      vi.unstubAllGlobals();
    }
  });

  // As jose's createRemoteJWKSet keeps a key set: 10 minutes, and a kid it lacks (a rotated key) fetches
  // it again, at most every 30 s.
  it('keeps the key set ten minutes, and fetches it again for an unknown kid at most every 30 s', async () => {
    const signer = async (kid: string) => {
      const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
      return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
    };
    const [first, second] = [await signer('first'), await signer('second')];
    let served: JWK[] = [first.jwk];
    let fetches = 0;
    const server = createServer((_req, res) => {
      fetches++;
      res.setHeader('content-type', 'application/json').end(JSON.stringify({ keys: served }));
    });
    const port = await listen(server, 0);
    const issuer = running.endpoints.issuer ?? '';
    const keys = createTokenVerifier({ issuer, jwksUri: `http://127.0.0.1:${port}/keys` });
    const signed = ({ privateKey, jwk }: typeof first) => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ oid: 'o', tid: context.secrets.tenantId, appid: 'a' })
        .setProtectedHeader({ alg: 'RS256', kid: jwk.kid })
        .setIssuer(issuer)
        .setAudience('https://vault.azure.net')
        .setIssuedAt(now)
        .setExpirationTime(now + 3600)
        .sign(privateKey);
    };
    const verdict = async (key: typeof first) =>
      reasonOf(keys.verify(await signed(key), ['https://vault.azure.net']));
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      expect([await verdict(first), await verdict(first), fetches]).toEqual(['accepted', 'accepted', 1]);
      served = [first.jwk, second.jwk];
      expect([await verdict(second), fetches]).toEqual(['signature', 1]);
      vi.advanceTimersByTime(30_000);
      expect([await verdict(second), fetches]).toEqual(['accepted', 2]);
      served = [second.jwk];
      vi.advanceTimersByTime(599_000);
      expect([await verdict(first), fetches]).toEqual(['accepted', 2]);
      vi.advanceTimersByTime(1_000);
      expect([await verdict(first), fetches]).toEqual(['signature', 3]);
    } finally {
      vi.useRealTimers();
      await close(server);
    }
  });
});
