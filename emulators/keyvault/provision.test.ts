/**
 * The topology's `keyVault.secrets` decides which secrets the vault holds at start; the stack's wiring
 * only supplies their values. A declared secret without a value stops the start with a clear error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../core/testing.ts';
import keyvault from './index.ts';
import { seed, startVaultStack, type VaultTestStack } from './test-stack.ts';

let stack: VaultTestStack;
beforeAll(async () => {
  stack = await startVaultStack();
});
afterAll(() => stack?.stop());

async function names(): Promise<string[]> {
  const listed: string[] = [];
  for await (const secret of stack.client.listPropertiesOfSecrets()) listed.push(secret.name);
  return listed.sort();
}

describe('secrets from the topology', () => {
  it('holds exactly the declared secrets, with the values the wiring gives; an undeclared value is not seeded', async () => {
    expect(stack.context.topology.keyVault.secrets).toEqual(['DocumentDbConnection', 'EncryptionKey']);
    expect(await names()).toEqual(['DocumentDbConnection', 'EncryptionKey']);
    await stack.vault.stop();
    await stack.restart({ seed: { ...seed, NotDeclared: 'x' } });
    expect(await names()).toEqual(['DocumentDbConnection', 'EncryptionKey']);
    expect((await stack.client.getSecret('DocumentDbConnection')).value).toBe(seed.DocumentDbConnection);
  });

  it('refuses to start when a declared secret has no value', async () => {
    const options = stack.options({ port: 0, seed: { EncryptionKey: seed.EncryptionKey } });
    await expect(startEmulator(keyvault, options, stack.context)).rejects.toThrow(
      "keyVault.secrets in the topology declares 'DocumentDbConnection', but the stack gives no value for it",
    );
  });
});
