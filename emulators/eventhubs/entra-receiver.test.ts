/**
 * Entra ID over AMQPS, as the function app: its managed identity holds Azure Event Hubs Data Receiver
 * in the topology, so it may read but not send. Tokens not from the stack's provider are refused.
 */
import { EventHubProducerClient, earliestEventPosition, type MessagingError } from '@azure/event-hubs';
import { ManagedIdentityCredential, type TokenCredential } from '@azure/identity';
import { generateKeyPair, importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EntraStarted, HUB, record, startEventHubsWithIdentity, waitFor } from './test-support.ts';

let hub: EntraStarted;
const noRetry = { retryOptions: { maxRetries: 0, timeoutInMs: 10_000 } };

beforeAll(async () => {
  hub = await startEventHubsWithIdentity();
  hub.signInAs('functionApp');
});
afterAll(async () => {
  await hub?.running.stop();
  hub?.remove();
});

/** A credential handing out a fixed token: what a client holding a stolen, forged or stale token does. */
const fixedToken = (token: string): TokenCredential => ({
  getToken: async () => ({ token, expiresOnTimestamp: Date.now() + 3600_000 }),
});

/** A token shaped like the provider's, for the function app, signed with `key` and expiring at `exp`. */
async function token(key: CryptoKey | Uint8Array, kid: string, exp: number): Promise<string> {
  const identity = hub.context.secrets.identities.functionApp;
  return new SignJWT({
    tid: hub.context.secrets.tenantId,
    oid: identity?.principalId,
    appid: identity?.clientId,
  })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid })
    .setIssuer(hub.issuer)
    .setAudience('https://eventhubs.azure.net')
    .setIssuedAt(exp - 7200)
    .setNotBefore(exp - 7200)
    .setExpirationTime(exp)
    .sign(key);
}

async function readWith(credential: TokenCredential): Promise<MessagingError> {
  const producer = new EventHubProducerClient(hub.fullyQualifiedNamespace, HUB, credential, noRetry);
  try {
    await producer.getEventHubProperties();
  } catch (error) {
    return error as MessagingError;
  } finally {
    await producer.close();
  }
  throw new Error('expected the token to be refused');
}

describe('Event Hubs with Entra ID tokens: the function app (Data Receiver)', () => {
  it('receives over AMQPS with ManagedIdentityCredential what was sent', async () => {
    const producer = new EventHubProducerClient(hub.connectionString, HUB);
    await producer.sendBatch([{ body: 'for the function app' }], { partitionId: '0' });
    await producer.close();

    const credential = new ManagedIdentityCredential();
    const { fullyQualifiedNamespace } = hub;
    const recording = record({ fullyQualifiedNamespace, credential }, '0', earliestEventPosition);
    try {
      await waitFor(
        () => recording.events.length > 0 || recording.errors.length > 0,
        'the event or an error',
      );
      expect(recording.errors).toEqual([]);
      expect(recording.events.map((e) => e.body)).toEqual(['for the function app']);
    } finally {
      await recording.close();
    }
  });

  it('may not send: the link is refused with the missing Send claim, as Azure RBAC does', async () => {
    const producer = new EventHubProducerClient(
      hub.fullyQualifiedNamespace,
      HUB,
      new ManagedIdentityCredential(),
      noRetry,
    );
    try {
      const error = (await producer.sendBatch([{ body: 'not allowed' }], { partitionId: '1' }).then(
        () => undefined,
        (e: unknown) => e,
      )) as MessagingError;
      expect(error?.code).toBe('UnauthorizedError');
      expect(error.message).toMatch(
        new RegExp(
          `^Unauthorized access\\. 'Send' claim\\(s\\) are required to perform this operation\\. Resource: 'sb://${hub.fullyQualifiedNamespace.replace(/\./g, '\\.')}/${HUB}/Partitions/1'\\. TrackingId:`,
        ),
      );
    } finally {
      await producer.close();
    }
    const check = new EventHubProducerClient(hub.connectionString, HUB);
    expect((await check.getPartitionProperties('1')).isEmpty).toBe(true);
    await check.close();
  });

  it('refuses an expired token and a forged one at put-token (401)', async () => {
    const { signingKey } = hub.context.secrets;
    const stackKey = await importJWK(signingKey, 'RS256');
    const expired = await readWith(
      fixedToken(
        await token(stackKey as CryptoKey, signingKey.kid as string, Math.floor(Date.now() / 1000) - 3600),
      ),
    );
    expect(expired.code).toBe('UnauthorizedError');
    expect(expired.message).toMatch(/^ExpiredToken: The token is expired\. TrackingId:/);

    const { privateKey } = await generateKeyPair('RS256');
    const forged = await readWith(
      fixedToken(await token(privateKey, signingKey.kid as string, Math.floor(Date.now() / 1000) + 3600)),
    );
    expect(forged.code).toBe('UnauthorizedError');
    expect(forged.message).toMatch(/^InvalidSignature: The token has an invalid signature\. TrackingId:/);

    const notAJwt = await readWith(fixedToken('not.a-token'));
    expect(notAJwt.code).toBe('UnauthorizedError');
    expect(notAJwt.message).toMatch(/^MalformedToken: /);
  });
});
