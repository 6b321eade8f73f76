import { SecretClient } from '@azure/keyvault-secrets';
import { importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, testContext, testDataDir } from '../core/testing.ts';
import keyvault from './index.ts';
import { failure, seed, startVaultStack, type VaultTestStack } from './test-stack.ts';

let stack: VaultTestStack;

beforeAll(async () => {
  stack = await startVaultStack();
  await stack.vault.actions?.setAccessPolicy?.({ identity: 'functionApp', secrets: ['Get', 'List', 'Set'] });
});
afterAll(() => stack?.stop());

describe('Key Vault state', () => {
  it('keeps secrets and versions across a restart, and seeds only what differs', async () => {
    const { client } = stack;
    const kept = await client.setSecret('Kept', 'value');
    const seededVersion = (await client.getSecret('EncryptionKey')).properties.version;
    await stack.vault.stop();
    await stack.restart();
    expect((await client.getSecret('Kept')).properties.version).toBe(kept.properties.version);
    expect((await client.getSecret('EncryptionKey')).properties.version).toBe(seededVersion);
    // The wiring moved (another port): the seed adds a version with the new value.
    await stack.vault.stop();
    const moved = { ...seed, DocumentDbConnection: 'AccountEndpoint=https://127.0.0.1:9999/;' };
    await stack.restart({ seed: moved });
    expect((await client.getSecret('DocumentDbConnection')).value).toBe(moved.DocumentDbConnection);
    const history = [];
    for await (const p of client.listPropertiesOfSecretVersions('DocumentDbConnection'))
      history.push(p.version);
    expect(history).toHaveLength(2);
    expect((await client.getSecret('EncryptionKey')).properties.version).toBe(seededVersion);
  });

  it('keeps nothing in in-memory mode', async () => {
    const data = testDataDir();
    const memory = await testContext(data.dir, { inMemory: true });
    // Same keys and identities as the stack, nothing persisted.
    Object.assign(memory, { secrets: stack.context.secrets, tls: stack.context.tls });
    const options = stack.options();
    let volatile = await startEmulator(keyvault, options, memory);
    const client = new SecretClient(`${volatile.endpoints.vault}`, stack.credential, {
      disableChallengeResourceVerification: true,
    });
    await volatile.actions?.setAccessPolicy?.({ identity: 'functionApp', secrets: ['all'] });
    await client.setSecret('Fleeting', 'x');
    await volatile.stop();
    volatile = await startEmulator(
      keyvault,
      { ...options, port: Number(new URL(`${volatile.endpoints.vault}`).port) },
      memory,
    );
    await volatile.actions?.setAccessPolicy?.({ identity: 'functionApp', secrets: ['all'] });
    expect(await failure(client.getSecret('Fleeting'))).toMatchObject({ statusCode: 404 });
    await volatile.stop();
    data.remove();
  });

  it('judges token expiry by real time: moving the stack clock leaves the SDK cached token valid', async () => {
    const cached = (await stack.credential.getToken('https://vault.azure.net/.default')).token;
    expect((await stack.client.getSecret('EncryptionKey')).value).toBe(seed.EncryptionKey);
    stack.context.clock.advance(25 * 3600_000);
    // The same token, from the SDK's cache, still opens the vault a stack day later.
    expect((await stack.client.getSecret('EncryptionKey')).value).toBe(seed.EncryptionKey);
    expect((await stack.credential.getToken('https://vault.azure.net/.default')).token).toBe(cached);

    const { signingKey, tenantId, identities } = stack.context.secrets;
    const exp = Math.floor(Date.now() / 1000) - 3600;
    const expired = await new SignJWT({
      oid: identities.functionApp?.principalId,
      tid: tenantId,
      appid: identities.functionApp?.clientId,
    })
      .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid })
      .setIssuer(`${stack.idp.endpoints.issuer}`)
      .setAudience('https://vault.azure.net')
      .setIssuedAt(exp - 3600)
      .setExpirationTime(exp)
      .sign(await importJWK(signingKey, 'RS256'));
    const response = await stack.raw(
      'secrets?api-version=7.4',
      { headers: { authorization: `Bearer ${expired}` } },
      false,
    );
    expect(response).toMatchObject({
      status: 401,
      body: { error: { message: 'Error validating token: IDX10223' } },
    });
  });
});
