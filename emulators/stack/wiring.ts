import { join } from 'node:path';
import { ACCOUNT, blobConnectionString, blobEventsUrl } from '../blob/azurite.ts';
import {
  type Apps,
  appIdentity,
  hostingPlan,
  LOCAL_VAULT_NAME,
  repositoryRoot,
  resolveSettings,
  settingReference,
  vaultSecretOf,
} from '../core/apps.ts';
import { keyVaultReference } from '../core/keyvault-references.ts';
import { type SharedSecrets, sessionSecret } from '../core/secrets.ts';
import type { Topology } from '../core/topology.ts';
import { type EmulatorName, hostOfKind, type ServiceName } from '../registry.ts';

const HOST = '127.0.0.1';

/** Which component serves each resource an app setting can name (`@storage.…` → blob). */
const SERVICE_OF: Record<string, ServiceName> = {
  storage: 'blob',
  cosmos: 'cosmos',
  keyvault: 'keyvault',
  eventhubs: 'eventhubs',
  eventgrid: 'eventgrid',
  identity: 'identity',
  directory: 'identity',
};

/** One component of the stack as the launcher starts it. */
export interface ComponentPlan {
  name: string;
  emulator: EmulatorName;
  options: Record<string, unknown>;
  /** Endpoints it must report when ready (checked at every start). */
  expected: Record<string, string>;
  /** Components that must answer before it starts. */
  startAfter: string[];
  /** The stack's ports (by name) it listens on. */
  ports: string[];
  /** For apps: its folder and build module (the launcher builds it before it starts). */
  app?: { dir: string; build?: string };
}

/**
 * Everything the stack's parts must be told about each other, derived from the ports alone so that
 * every component can start at once. Each component's reported endpoints are checked against
 * `expected` when it is ready, so this cannot drift from what the emulators really serve.
 */
export function wire(
  ports: Record<string, number>,
  secrets: SharedSecrets,
  dataDir: string,
  topology: Topology,
  apps: Apps,
  overrides: Record<string, Record<string, string>> = {},
  /** The components this stack runs (all when undefined). */
  running?: readonly string[],
) {
  const at = (name: string) => ports[name] as number;
  const authority = `https://${HOST}:${at('identity')}`;
  const tenant = secrets.tenantId;
  const issuer = `${authority}/${tenant}/v2.0`;
  const jwksUri = `${authority}/${tenant}/discovery/v2.0/keys`;
  const blob = `http://${HOST}:${at('blob')}/${ACCOUNT}`;
  const storage = blobConnectionString(blob, secrets.storageKey);
  const cosmos = `https://${HOST}:${at('cosmos')}/`;
  const documentDb = `AccountEndpoint=${cosmos};AccountKey=${secrets.cosmosKey};`;
  const vault = `https://${HOST}:${at('keyvault')}/`;
  const streamHub = `Endpoint=sb://${HOST}:${at('eventhubs')};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${secrets.eventHubsKey};UseDevelopmentEmulator=true`;
  const eventHubsNamespace = `${HOST}:${at('eventhubs-amqps')}`;
  const topicEndpoint = (topic: string) => `https://${HOST}:${at('eventgrid')}/${topic}/api/events`;
  const identity = (name: string) => ({
    IDENTITY_ENDPOINT: `${authority}/msi/token`,
    IDENTITY_HEADER: secrets.identities[name]?.header ?? '',
  });
  const appUrl = (app: string) => `http://${HOST}:${at(app)}`;
  const gatewayUrl = `https://${HOST}:${at('gateway')}`;
  /** APIM's portal has a host of its own; here it is a path of the gateway's (gateway-sim/README.md). */
  const portalUrl = `${gatewayUrl}/developer`;

  /** What `@service.value` in an app setting stands for here (in Azure: the deployment's resources). */
  const values: Record<string, string> = {
    'storage.connectionString': storage,
    'storage.blobEndpoint': blob,
    'cosmos.connectionString': documentDb,
    'cosmos.endpoint': cosmos,
    'keyvault.uri': vault,
    // The local vault's host is not *.vault.azure.net; the client checks that unless told not to.
    'keyvault.disableChallengeResourceVerification': 'true',
    'eventhubs.connectionString': streamHub,
    'eventhubs.fullyQualifiedNamespace': eventHubsNamespace,
    'identity.instance': `${authority}/`,
    'identity.tenantId': tenant,
    'identity.graph': `${authority}/v1.0`,
    'stack.sessionSecret': sessionSecret(secrets),
    ...Object.fromEntries(
      Object.entries(secrets.directory.applications).flatMap(([name, registration]) => [
        [`directory.${name}.clientId`, registration.clientId],
        [`directory.${name}.clientSecret`, registration.clientSecret],
      ]),
    ),
    ...Object.fromEntries(
      topology.eventGrid.topics.flatMap((topic) => [
        [`eventgrid.${topic.name}.endpoint`, topicEndpoint(topic.name)],
        [`eventgrid.${topic.name}.key`, secrets.eventGridKey],
      ]),
    ),
  };

  /**
   * The vaults an app's host resolves Key Vault references against, by name: none when the stack runs no
   * Key Vault (`--components`), so a reference is unresolvable at once instead of waited for.
   */
  const keyVaults: Record<string, string> =
    !running || running.includes('keyvault') ? { [LOCAL_VAULT_NAME]: vault } : {};
  const appPlans = Object.entries(apps).map(([name, app]): ComponentPlan => {
    const identityName = appIdentity(topology, name);
    // Overrides may use references too (`@eventhubs.fullyQualifiedNamespace`): tests switch connections so.
    // A setting named like a vault secret is a Key Vault reference, as the Azure template makes it: the
    // app's host resolves it with the app's identity before the app starts.
    const declared = Object.fromEntries(
      Object.entries(app.settings).map(([setting, value]) => {
        const secret = vaultSecretOf(topology, setting);
        return [setting, secret ? keyVaultReference(LOCAL_VAULT_NAME, secret) : value];
      }),
    );
    const settings = {
      ...resolveSettings(name, { ...declared, ...overrides[name] }, values),
      ...(identityName && identity(identityName)),
    };
    const references = Object.keys(app.settings).some((setting) => vaultSecretOf(topology, setting));
    // An app starts once what its settings name answers (and the identity endpoint, if it has one; the
    // vault, if a setting is a reference).
    const uses = [
      ...Object.values(app.settings).flatMap((value) => settingReference(value)?.service ?? []),
      ...(references ? ['keyvault'] : []),
    ];
    const startAfter = [...new Set([...uses, ...(identityName ? ['identity'] : [])])].flatMap(
      (service) => SERVICE_OF[service] ?? [],
    );
    const appDir = join(repositoryRoot, app.folder);
    const common = {
      port: at(name),
      appDir,
      settings,
      // The site App Service tells the app of (WEBSITE_SITE_NAME, WEBSITE_SKU from the template's plan).
      siteName: name,
      sku: hostingPlan[app.kind].tier,
      keyVaults,
    };
    const options =
      app.kind === 'functionapp'
        ? {
            ...common,
            logFile: join(dataDir, 'logs', `${name}.jsonl`),
            // The blob trigger hears of new blobs from the store at once rather than by its next sweep.
            blobEvents: { [blob]: blobEventsUrl(blob) },
          }
        : { ...common, healthCheckPath: app.healthCheckPath };
    return {
      name,
      emulator: hostOfKind[app.kind],
      options,
      expected: { baseUrl: appUrl(name) },
      startAfter,
      ports: [name],
      app: { dir: appDir, build: app.build },
    };
  });

  const service = (
    name: ServiceName,
    options: Record<string, unknown>,
    expected: Record<string, string>,
    ports: string[] = [name],
    startAfter: string[] = [],
  ): ComponentPlan => ({
    name,
    emulator: name,
    options: { port: at(name), ...options },
    expected,
    startAfter,
    ports,
  });
  /** The app registrations' redirect URIs: each application's paths on the app it is registered `on`. */
  const registeredUris = (paths: 'redirectPaths' | 'postLogoutRedirectPaths') =>
    Object.fromEntries(
      Object.entries(topology.directory.applications).flatMap(([name, registration]) => {
        const on = registration.web?.on;
        // `on` names an app, or the gateway's developer portal.
        const base = on && apps[on] ? appUrl(on) : on === 'developerPortal' ? portalUrl : undefined;
        return base ? [[name, (registration.web?.[paths] ?? []).map((path) => `${base}${path}`)]] : [];
      }),
    );
  const functionsApp = Object.entries(apps).find(([, app]) => app.kind === 'functionapp')?.[0];

  return {
    authUrl: authority,
    controlUrl: `http://${HOST}:${at('control')}`,
    components: [
      service(
        'identity',
        {
          redirectUris: registeredUris('redirectPaths'),
          postLogoutRedirectUris: registeredUris('postLogoutRedirectPaths'),
        },
        { authority, issuer, jwksUri, identityEndpoint: `${authority}/msi/token` },
      ),
      service('blob', {}, { blob, connectionString: storage, events: blobEventsUrl(blob) }),
      service('cosmos', { issuer, jwksUri }, { cosmos }),
      service(
        'keyvault',
        {
          authority: `${authority}/${tenant}`,
          issuer,
          jwksUri,
          seed: { EncryptionKey: secrets.encryptionKey, DocumentDbConnection: documentDb },
        },
        { vault },
      ),
      service(
        'eventhubs',
        { issuer, jwksUri, tlsPort: at('eventhubs-amqps') },
        { connectionString: streamHub, fullyQualifiedNamespace: eventHubsNamespace },
        ['eventhubs', 'eventhubs-amqps'],
      ),
      service(
        'eventgrid',
        { functionsBaseUrl: functionsApp && appUrl(functionsApp), issuer, jwksUri },
        Object.fromEntries(topology.eventGrid.topics.map((topic) => [topic.name, topicEndpoint(topic.name)])),
      ),
      service(
        'gateway',
        {
          artifactsDir: join(repositoryRoot, 'system', 'gateway'),
          // The named values system/gateway/named-values.json declares (in Azure: the deployment's).
          namedValues: {
            FunctionAppBaseUrl: functionsApp ? appUrl(functionsApp) : '',
            WebAppBaseUrl: apps.web ? appUrl('web') : '',
            FunctionKey: secrets.functionKey,
            AuthUrl: authority,
            TenantId: tenant,
            EntraClientId: secrets.directory.applications.taskApi?.clientId ?? '',
            EntraClientSecret: secrets.directory.applications.taskApi?.clientSecret ?? '',
          },
          // The developer portal signs users in as the developerPortal app registration.
          portal: {
            authority: `${authority}/${tenant}`,
            clientId: secrets.directory.applications.developerPortal?.clientId ?? '',
            clientSecret: secrets.directory.applications.developerPortal?.clientSecret ?? '',
          },
        },
        { gatewayUrl, portalUrl },
        ['gateway'],
        // As a deployment writes the host's `default` key into FunctionKey once the code is deployed, the
        // gateway starts once the host answers, with its key then (useHostKey): keys renewed in an
        // earlier run persist in the host and win over the stack's.
        functionsApp ? [functionsApp] : [],
      ),
      ...appPlans,
    ],
    appUrl,
    gatewayUrl,
    portalUrl,
    /** App settings by the spec's names (and the Functions identity-connection convention). */
    connections: {
      StorageConnection: storage,
      AzureWebJobsStorage: storage,
      DocumentDbConnection: documentDb,
      DocumentDbConnection__accountEndpoint: cosmos,
      StreamHubConnection: streamHub,
      StreamHubConnection__fullyQualifiedNamespace: eventHubsNamespace,
      KeyVaultUri: vault,
      TaskCreatedTopicEndpoint: topicEndpoint('taskcreatedtopic'),
      TaskCreatedTopicKey: secrets.eventGridKey,
    },
    identity,
    /** What the vault was seeded with. */
    secrets: { EncryptionKey: secrets.encryptionKey, DocumentDbConnection: documentDb },
  };
}

export type Wiring = ReturnType<typeof wire>;

/**
 * Puts the function host's current `default` key into the gateway's FunctionKey named value, for its
 * starts from now on (see the gateway's plan in `wire`). A gateway already running keeps the key it
 * started with, as APIM keeps a named value until the next deployment writes it.
 */
export function useHostKey(plans: ComponentPlan[], functionKey: string): void {
  const gateway = plans.find((plan) => plan.emulator === 'gateway');
  if (gateway) (gateway.options.namedValues as Record<string, string>).FunctionKey = functionKey;
}
