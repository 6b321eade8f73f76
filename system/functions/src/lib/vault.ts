/** Secrets from Key Vault through the app's managed identity (DefaultAzureCredential), each read once. */
import { DefaultAzureCredential } from '@azure/identity';
import { SecretClient } from '@azure/keyvault-secrets';
import { once } from './once.ts';
import { requiredSetting, setting } from './settings.ts';

/** One credential for the vault and Cosmos: its token cache is shared. */
export const credential = new DefaultAzureCredential();

const client = once(async () => {
  return new SecretClient(requiredSetting('KeyVaultUri'), credential, {
    // The vault's challenge names https://vault.azure.net; a vault on another host (a local one)
    // passes the client's resource check only when this setting says so. Absent in Azure.
    disableChallengeResourceVerification: setting('KeyVaultDisableChallengeResourceVerification') === 'true',
  });
});

function secret(name: string) {
  return once(async () => {
    const value = (await (await client()).getSecret(name)).value;
    if (!value) throw new Error(`the vault secret ${name} is empty`);
    return value;
  });
}

export const encryptionKeySecret = secret('EncryptionKey');
export const documentDbConnectionSecret = secret('DocumentDbConnection');
