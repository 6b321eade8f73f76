/**
 * Key Vault references in app settings, resolved as App Service resolves them before an app starts
 * (emulators/core/keyvault-references.ts): both syntaxes, versioned and versionless, with the app's managed
 * identity against the vault emulator; what cannot be resolved stays the reference text, with a warning
 * naming the setting and the reason and never a value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveKeyVaultReferences } from '../core/keyvault-references.ts';
import { seed, startVaultStack, type VaultTestStack } from './test-stack.ts';

let stack: VaultTestStack;
beforeAll(async () => {
  stack = await startVaultStack();
});
afterAll(async () => {
  await stack?.stop();
});

/** Resolves `settings` as functionApp's host would, with the stack's vault named `local`. */
async function resolve(settings: Record<string, string>) {
  const warnings: string[] = [];
  const resolved = await resolveKeyVaultReferences(
    {
      ...settings,
      IDENTITY_ENDPOINT: stack.idp.endpoints.identityEndpoint as string,
      IDENTITY_HEADER: stack.context.secrets.identities.functionApp?.header ?? '',
    },
    {
      vaults: { local: stack.vault.endpoints.vault as string },
      warn: (message) => warnings.push(message),
    },
  );
  return { resolved, warnings };
}

describe('Key Vault references', () => {
  it('resolves both syntaxes, versionless, to the current value; other settings are left alone', async () => {
    const vault = stack.vault.endpoints.vault as string;
    const { resolved, warnings } = await resolve({
      ByName: '@Microsoft.KeyVault(VaultName=local;SecretName=EncryptionKey)',
      ByAzureUri: '@Microsoft.KeyVault(SecretUri=https://local.vault.azure.net/secrets/EncryptionKey/)',
      ByLocalUri: `@Microsoft.KeyVault(SecretUri=${vault}secrets/DocumentDbConnection)`,
      Plain: 'plain',
    });
    expect(warnings).toEqual([]);
    expect(resolved).toMatchObject({
      ByName: seed.EncryptionKey,
      ByAzureUri: seed.EncryptionKey,
      ByLocalUri: seed.DocumentDbConnection,
      Plain: 'plain',
    });
  });

  it('reads the version a reference names, and the newest without one', async () => {
    await stack.vault.actions?.setAccessPolicy?.({
      identity: 'functionApp',
      secrets: ['Get', 'List', 'Set'],
    });
    const first = await stack.client.setSecret('Rotated', 'first-value');
    await stack.client.setSecret('Rotated', 'second-value');
    const version = first.properties.version as string;
    const { resolved, warnings } = await resolve({
      PinnedUri: `@Microsoft.KeyVault(SecretUri=https://local.vault.azure.net/secrets/Rotated/${version})`,
      PinnedName: `@Microsoft.KeyVault(VaultName=local;SecretName=Rotated;SecretVersion=${version})`,
      Latest: '@Microsoft.KeyVault(VaultName=local;SecretName=Rotated)',
    });
    expect(warnings).toEqual([]);
    expect(resolved).toMatchObject({
      PinnedUri: 'first-value',
      PinnedName: 'first-value',
      Latest: 'second-value',
    });
  });

  it('passes an unresolvable reference through as its text, saying which setting and why, never a value', async () => {
    const settings = {
      Missing: '@Microsoft.KeyVault(VaultName=local;SecretName=NoSuchSecret)',
      OtherVault: '@Microsoft.KeyVault(VaultName=elsewhere;SecretName=EncryptionKey)',
      OtherHost: '@Microsoft.KeyVault(SecretUri=https://127.0.0.2:1/secrets/EncryptionKey)',
      Malformed: '@Microsoft.KeyVault(SecretName=EncryptionKey)',
    };
    const { resolved, warnings } = await resolve(settings);
    expect(resolved).toMatchObject(settings);
    expect(warnings.sort()).toEqual([
      'Key Vault reference in app setting Malformed was not resolved: it needs SecretUri, or VaultName and SecretName',
      'Key Vault reference in app setting Missing was not resolved: the vault answered 404 SecretNotFound for the secret NoSuchSecret',
      "Key Vault reference in app setting OtherHost was not resolved: the vault https://127.0.0.2:1/ is not one of this stack's (local)",
      "Key Vault reference in app setting OtherVault was not resolved: the vault elsewhere is not one of this stack's (local)",
    ]);
  });

  it('passes the reference through when the vault refuses the identity', async () => {
    await stack.vault.actions?.setAccessPolicy?.({ identity: 'functionApp', secrets: [] });
    const reference = '@Microsoft.KeyVault(VaultName=local;SecretName=EncryptionKey)';
    const { resolved, warnings } = await resolve({ Key: reference });
    expect(resolved.Key).toBe(reference);
    expect(warnings).toEqual([
      'Key Vault reference in app setting Key was not resolved: the vault answered 403 Forbidden for the secret EncryptionKey',
    ]);
    expect(warnings.join('\n')).not.toContain(seed.EncryptionKey);
    await stack.vault.actions?.setAccessPolicy?.({ identity: 'functionApp', secrets: ['Get', 'List'] });
  });
});
