import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ACCOUNT, blobConnectionString } from '../blob/azurite.ts';
import type { StackSecrets } from '../core/secrets.ts';
import type { PortName } from './ports.ts';

const HOST = '127.0.0.1';
/** The deployable function app the local Functions host runs. */
export const FUNCTION_APP_DIR = fileURLToPath(new URL('../../system/functions', import.meta.url));

/**
 * Everything the stack's parts must be told about each other, derived from the ports alone so that
 * every component can start at once. Each component's reported endpoints are checked against
 * `expected` when it is ready, so this cannot drift from what the emulators really serve.
 */
export function wire(
  ports: Record<PortName, number>,
  secrets: StackSecrets,
  dataDir: string,
  overrides: Record<string, Record<string, string>> = {},
) {
  const authority = `https://${HOST}:${ports.identity}`;
  const tenant = secrets.tenantId;
  const issuer = `${authority}/${tenant}/v2.0`;
  const jwksUri = `${authority}/${tenant}/discovery/v2.0/keys`;
  const blob = `http://${HOST}:${ports.blob}/${ACCOUNT}`;
  const storage = blobConnectionString(blob, secrets.storageKey);
  const cosmos = `https://${HOST}:${ports.cosmos}/`;
  const documentDb = `AccountEndpoint=${cosmos};AccountKey=${secrets.cosmosKey};`;
  const vault = `https://${HOST}:${ports.keyvault}/`;
  const baseUrl = `http://${HOST}:${ports.functions}`;
  const streamHub = `Endpoint=sb://${HOST}:${ports.eventhubs};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${secrets.eventHubsKey};UseDevelopmentEmulator=true`;
  const taskCreatedTopic = `https://${HOST}:${ports.eventgrid}/taskcreatedtopic/api/events`;
  const identity = (name: string) => ({
    IDENTITY_ENDPOINT: `${authority}/msi/token`,
    IDENTITY_HEADER: secrets.identities[name]?.header ?? '',
  });
  const connections = {
    StorageConnection: storage,
    AzureWebJobsStorage: storage,
    DocumentDbConnection: documentDb,
    DocumentDbConnection__accountEndpoint: cosmos,
    StreamHubConnection: streamHub,
    KeyVaultUri: vault,
    TaskCreatedTopicEndpoint: taskCreatedTopic,
    TaskCreatedTopicKey: secrets.eventGridKey,
  };
  // The function app's settings, as Azure's app settings would hold them. Cosmos is reached through the
  // vault's DocumentDbConnection secret by default (the system creates TasksDB on first use, which the
  // data-contributor role may not); give DocumentDbConnection__accountEndpoint to go role-based.
  const functionSettings = {
    FUNCTIONS_WORKER_RUNTIME: 'node',
    AzureWebJobsStorage: storage,
    StorageConnection: storage,
    StreamHubConnection: streamHub,
    // The change-feed trigger's connection (in Azure: a Key Vault reference or the __accountEndpoint form).
    DocumentDbConnection: documentDb,
    KeyVaultUri: vault,
    // The local vault's host is not *.vault.azure.net; the client checks that unless told not to.
    KeyVaultDisableChallengeResourceVerification: 'true',
    TaskCreatedTopicEndpoint: taskCreatedTopic,
    TaskCreatedTopicKey: secrets.eventGridKey,
    ...identity('functionApp'),
    ...overrides.functions,
  };

  return {
    authUrl: authority,
    controlUrl: `http://${HOST}:${ports.control}`,
    /**
     * Components that must answer before another starts: the Functions host keeps its keys in blob
     * storage and opens its Event Hubs and change-feed listeners at start (the rest start at once).
     */
    startAfter: { functions: ['blob', 'cosmos', 'eventhubs'] } as Partial<Record<string, string[]>>,
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
      eventhubs: { port: ports.eventhubs },
      eventgrid: { port: ports.eventgrid, functionsBaseUrl: baseUrl },
      functions: {
        port: ports.functions,
        appDir: FUNCTION_APP_DIR,
        settings: functionSettings,
        logFile: join(dataDir, 'logs', 'functions.jsonl'),
      },
    },
    /** Endpoints each component must report when ready. */
    expected: {
      identity: { authority, issuer, jwksUri, identityEndpoint: `${authority}/msi/token` },
      blob: { blob, connectionString: storage },
      cosmos: { cosmos },
      keyvault: { vault },
      eventhubs: { connectionString: streamHub },
      eventgrid: { taskcreatedtopic: taskCreatedTopic },
      functions: { baseUrl },
    },
    /** App settings by the spec's names (and the Functions identity-connection convention). */
    connections,
    identity,
    /** What the vault was seeded with. */
    secrets: { EncryptionKey: secrets.encryptionKey, DocumentDbConnection: documentDb },
  };
}

export type Wiring = ReturnType<typeof wire>;
