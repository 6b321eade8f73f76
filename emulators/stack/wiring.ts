import { ACCOUNT, blobConnectionString } from '../blob/azurite.ts';
import type { StackSecrets } from '../core/secrets.ts';
import type { PortName } from './ports.ts';

const HOST = '127.0.0.1';

/**
 * Everything the stack's parts must be told about each other, derived from the ports alone so that
 * every component can start at once. Each component's reported endpoints are checked against
 * `expected` when it is ready, so this cannot drift from what the emulators really serve.
 */
export function wire(ports: Record<PortName, number>, secrets: StackSecrets) {
  const authority = `https://${HOST}:${ports.identity}`;
  const tenant = secrets.tenantId;
  const issuer = `${authority}/${tenant}/v2.0`;
  const jwksUri = `${authority}/${tenant}/discovery/v2.0/keys`;
  const blob = `http://${HOST}:${ports.blob}/${ACCOUNT}`;
  const storage = blobConnectionString(blob, secrets.storageKey);
  const cosmos = `https://${HOST}:${ports.cosmos}/`;
  const documentDb = `AccountEndpoint=${cosmos};AccountKey=${secrets.cosmosKey};`;
  const vault = `https://${HOST}:${ports.keyvault}/`;

  return {
    authUrl: authority,
    controlUrl: `http://${HOST}:${ports.control}`,
    /** Options each component is started with. */
    options: {
      identity: { port: ports.identity },
      blob: { port: ports.blob },
      cosmos: { port: ports.cosmos, issuer, jwksUri },
      keyvault: {
        port: ports.keyvault,
        authority: `${authority}/${tenant}`,
        issuer,
        jwksUri,
        seed: { EncryptionKey: secrets.encryptionKey, DocumentDbConnection: documentDb },
      },
    },
    /** Endpoints each component must report when ready. */
    expected: {
      identity: { authority, issuer, jwksUri, identityEndpoint: `${authority}/msi/token` },
      blob: { blob, connectionString: storage },
      cosmos: { cosmos },
      keyvault: { vault },
    },
    /** App settings by the spec's names (and the Functions identity-connection convention). */
    connections: {
      StorageConnection: storage,
      AzureWebJobsStorage: storage,
      DocumentDbConnection: documentDb,
      DocumentDbConnection__accountEndpoint: cosmos,
      KeyVaultUri: vault,
    },
    /** What the vault was seeded with. */
    secrets: { EncryptionKey: secrets.encryptionKey, DocumentDbConnection: documentDb },
  };
}

export type Wiring = ReturnType<typeof wire>;
