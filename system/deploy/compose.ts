/**
 * docker-compose.yml derived from the one description (system/topology.json + system/apps.json): the
 * apps on Microsoft's images, Microsoft's emulators where one exists (Azurite, the Cosmos DB Linux
 * emulator vNext, the Event Hubs emulator), this project's image for the rest (Key Vault, identity,
 * Event Grid, …). Apps get the settings apps.json declares, with `@service.value` resolved to the
 * compose network's addresses instead of the embedded stack's.
 */
import { join } from 'node:path';
import { startFile } from '../../emulators/appservice/startup.ts';
import { ACCOUNT, blobConnectionString } from '../../emulators/blob/azurite.ts';
import {
  type Apps,
  appIdentity,
  hostingPlan,
  repositoryRoot,
  resolveSettings,
  settingReference,
} from '../../emulators/core/apps.ts';
import { environmentNames, platformSettings, readinessCheck } from '../../emulators/core/platform.ts';
import type { StackSecrets } from '../../emulators/core/secrets.ts';
import type { Topology } from '../../emulators/core/topology.ts';
import { type ServiceName, serviceNames } from '../../emulators/registry.ts';
import { DEFAULT_PORTS } from '../../emulators/stack/ports.ts';
import { directoryParameter, parameterVariable } from './arm.ts';
import { EVENTHUBS_CONFIG, stagedApp } from './paths.ts';

function fail(message: string): never {
  throw new Error(message);
}

/** Microsoft's well-known emulator keys: published in their documentation, the same on every machine. */
export const WELL_KNOWN = {
  azuriteKey: 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==',
  cosmosKey: 'C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==',
  eventHubsKey: 'SAS_KEY_VALUE',
} as const;

export const IMAGES = {
  functionapp: 'mcr.microsoft.com/azure-functions/node:4-node20',
  webapp: 'node:20',
  azurite: 'mcr.microsoft.com/azure-storage/azurite',
  cosmos: 'mcr.microsoft.com/cosmosdb/linux/azure-cosmos-emulator:vnext-preview',
  eventhubs: 'mcr.microsoft.com/azure-messaging/eventhubs-emulator',
  own: 'taskstack-emulators:local',
} as const;

/** The services Microsoft's images provide; every other service of the registry runs on this project's image. */
const MICROSOFT: Partial<Record<ServiceName, string>> = {
  blob: 'azurite',
  cosmos: 'cosmos',
  eventhubs: 'eventhubs',
};
/** Which compose service answers a setting reference (`@storage.…` → azurite). */
const SERVICE_OF_REFERENCE: Record<string, string> = {
  storage: 'azurite',
  cosmos: 'cosmos',
  keyvault: 'keyvault',
  eventhubs: 'eventhubs',
  eventgrid: 'eventgrid',
  identity: 'identity',
};

/** The vault secrets seeded from a resource (the rest come from the env file): what an app reading the vault also uses. */
const VAULT_SECRETS_FROM: Record<string, string> = { DocumentDbConnection: 'cosmos.connectionString' };

/** Where the local CA (created by the `init` service) is mounted in every container that needs it. */
const CA_DIR = '/taskstack/ca';

/**
 * Secrets are never in the file: compose reads them from the env file `system/deploy/compose-env.ts`
 * writes (`--env-file .taskstack/compose.env`); a missing one stops compose with this message.
 */
const secret = (name: string) => `\${${name}:?run: npx tsx system/deploy/compose-env.ts}`;
export const identityHeaderVariable = (identity: string) =>
  `TASKSTACK_IDENTITY_HEADER_${identity.toUpperCase()}`;

/** The env-file variable holding an app registration's client id or secret: the name `taskstack deploy` reads it from too. */
export const directoryVariable = (application: string, part: 'clientId' | 'clientSecret') =>
  parameterVariable(directoryParameter(application, part));

/** What `@service.value` stands for on the compose network (the embedded stack's list: emulators/stack/wiring.ts). */
export function composeValues(topology: Topology): Record<string, string> {
  const blob = `http://azurite:10000/${ACCOUNT}`;
  const cosmos = 'http://cosmos:8081/';
  const authority = `https://identity:${DEFAULT_PORTS.identity}`;
  return {
    // Queue and table too: Microsoft's Functions host keeps blob-trigger receipts and timers' state there.
    'storage.connectionString': `${blobConnectionString(blob, WELL_KNOWN.azuriteKey)}QueueEndpoint=http://azurite:10001/${ACCOUNT};TableEndpoint=http://azurite:10002/${ACCOUNT};`,
    'storage.blobEndpoint': blob,
    // vNext speaks plain HTTP by default; key auth only (no Entra RBAC).
    'cosmos.connectionString': `AccountEndpoint=${cosmos};AccountKey=${WELL_KNOWN.cosmosKey};`,
    'cosmos.endpoint': cosmos,
    'keyvault.uri': `https://keyvault:${DEFAULT_PORTS.keyvault}/`,
    'keyvault.disableChallengeResourceVerification': 'true',
    'eventhubs.connectionString': `Endpoint=sb://eventhubs;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${WELL_KNOWN.eventHubsKey};UseDevelopmentEmulator=true;`,
    // Microsoft's emulator takes no Entra tokens: an identity-based connection has nowhere to go but here.
    'eventhubs.fullyQualifiedNamespace': `eventhubs:${DEFAULT_PORTS.eventhubs}`,
    'identity.instance': `${authority}/`,
    'identity.tenantId': secret('TASKSTACK_TENANT_ID'),
    'identity.graph': `${authority}/v1.0`,
    'stack.sessionSecret': secret('TASKSTACK_SESSION_SECRET'),
    ...Object.fromEntries(
      Object.keys(topology.directory.applications).flatMap((application) => [
        [`directory.${application}.clientId`, secret(directoryVariable(application, 'clientId'))],
        [`directory.${application}.clientSecret`, secret(directoryVariable(application, 'clientSecret'))],
      ]),
    ),
    ...Object.fromEntries(
      topology.eventGrid.topics.flatMap((topic) => [
        [
          `eventgrid.${topic.name}.endpoint`,
          `https://eventgrid:${DEFAULT_PORTS.eventgrid}/${topic.name}/api/events`,
        ],
        [`eventgrid.${topic.name}.key`, secret('TASKSTACK_EVENTGRID_KEY')],
      ]),
    ),
  };
}

/** Each app's settings by the spec's names, resolved for the compose network (what a test compares with the embedded stack). */
export function composeAppSettings(topology: Topology, apps: Apps): Record<string, Record<string, string>> {
  const values = composeValues(topology);
  return Object.fromEntries(
    Object.entries(apps).map(([name, app]) => {
      const identity = appIdentity(topology, name);
      return [
        name,
        {
          ...resolveSettings(name, app.settings, values),
          ...(identity && {
            IDENTITY_ENDPOINT: `https://identity:${DEFAULT_PORTS.identity}/msi/token`,
            IDENTITY_HEADER: secret(identityHeaderVariable(identity)),
          }),
        },
      ];
    }),
  );
}

/** The Event Hubs emulator's Config.json: the topology's hubs (consumer group `$default` is always there). */
export function eventHubsConfig(topology: Topology) {
  return {
    UserConfig: {
      NamespaceConfig: [
        {
          Type: 'EventHub',
          Name: 'emulatorNs1',
          Entities: topology.eventHubs.hubs.map((hub) => ({
            Name: hub.name,
            PartitionCount: String(hub.partitionCount),
            ConsumerGroups: [],
          })),
        },
      ],
      LoggingConfig: { Type: 'File' },
    },
  };
}

const published = (port: number, target = port) => [`127.0.0.1:${port}:${target}`];
const healthy = { condition: 'service_healthy' };
/** Health checks run inside the container; Node is in every image that uses these. */
const nodeCheck = (script: string) => ({
  test: ['CMD', 'node', '-e', script],
  interval: '5s',
  timeout: '5s',
  retries: 30,
  start_period: '10s',
});
const tcpCheck = (port: number) =>
  nodeCheck(
    `require('net').connect(${port},'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))`,
  );
/** Healthy when `path` answers with a status from `lowest` to `highest`; a redirect is an answer, not followed. */
const httpCheck = (port: number, { path, lowest, highest }: ReturnType<typeof readinessCheck>) =>
  nodeCheck(
    `fetch('http://127.0.0.1:${port}${path}',{redirect:'manual'}).then(r=>process.exit(r.status>=${lowest}&&r.status<=${highest}?0:1),()=>process.exit(1))`,
  );
/** For images without Node: bash's /dev/tcp. */
const bashTcpCheck = (port: number) => ({
  ...tcpCheck(port),
  test: ['CMD', 'bash', '-c', `exec 3<>/dev/tcp/127.0.0.1/${port}`],
});

/** This project's own components (one image, the component chosen by the command). */
function ownServices(topology: Topology, apps: Apps, own: ServiceName[]) {
  const port = (name: ServiceName) =>
    (DEFAULT_PORTS as Record<string, number>)[name] ??
    fail(
      `service ${name} has no default port (emulators/stack/ports.ts): the compose file publishes it there`,
    );
  const identityPort = DEFAULT_PORTS.identity;
  const tenant = secret('TASKSTACK_TENANT_ID');
  // The identity component listens on loopback inside its container: its tokens name that address.
  const issuer = `https://127.0.0.1:${identityPort}/${tenant}/v2.0`;
  const jwksUri = `https://identity:${identityPort}/${tenant}/discovery/v2.0/keys`;
  const functionsApp = Object.entries(apps).find(([, app]) => app.kind === 'functionapp')?.[0];
  const webApp = Object.entries(apps).find(([, app]) => app.kind === 'webapp')?.[0];
  const values = composeValues(topology);
  // APIM's portal has a host of its own; the simulator serves it under /developer (gateway-sim/README.md).
  const portalUrl = own.includes('gateway') ? `https://127.0.0.1:${port('gateway')}/developer` : undefined;
  // Sign-in redirects go to the browser, on the host: an app's published address, or the portal's.
  const redirects = (key: 'redirectPaths' | 'postLogoutRedirectPaths') =>
    Object.fromEntries(
      Object.entries(topology.directory.applications).flatMap(([name, application]) => {
        if (!application.web) return [];
        const app = apps[application.web.on];
        const base = app
          ? `http://127.0.0.1:${app.localPort}`
          : application.web.on === 'developerPortal'
            ? portalUrl
            : undefined;
        return base ? [[name, application.web[key].map((path) => `${base}${path}`)]] : [];
      }),
    );
  const options: Partial<Record<ServiceName, Record<string, unknown>>> = {
    identity: {
      redirectUris: redirects('redirectPaths'),
      postLogoutRedirectUris: redirects('postLogoutRedirectPaths'),
    },
    keyvault: {
      authority: `https://identity:${identityPort}/${tenant}`,
      issuer,
      jwksUri,
      seed: {
        EncryptionKey: secret('TASKSTACK_ENCRYPTION_KEY'),
        ...Object.fromEntries(Object.entries(VAULT_SECRETS_FROM).map(([name, key]) => [name, values[key]])),
      },
    },
    eventgrid: { functionsBaseUrl: functionsApp && `http://${functionsApp}:80` },
    gateway: {
      // The image's working directory (Dockerfile) holds system/gateway/.
      artifactsDir: 'system/gateway',
      // The named values system/gateway/named-values.json declares (the embedded stack's: emulators/stack/wiring.ts).
      namedValues: {
        FunctionAppBaseUrl: functionsApp && `http://${functionsApp}:80`,
        WebAppBaseUrl: webApp && `http://${webApp}:80`,
        FunctionKey: secret('TASKSTACK_FUNCTION_KEY'),
        AuthUrl: `https://identity:${identityPort}`,
        TenantId: tenant,
        EntraClientId: values['directory.taskApi.clientId'],
        EntraClientSecret: values['directory.taskApi.clientSecret'],
      },
      // The developer portal signs users in as the developerPortal registration.
      portal: {
        authority: `https://identity:${identityPort}/${tenant}`,
        clientId: values['directory.developerPortal.clientId'],
        clientSecret: values['directory.developerPortal.clientSecret'],
      },
    },
  };
  /** What a component calls, beyond the identity provider: the gateway's backends. */
  const backends: Partial<Record<ServiceName, (string | undefined)[]>> = { gateway: [functionsApp, webApp] };
  const build = { context: '.', dockerfile: 'Dockerfile' };
  return {
    init: {
      build,
      image: IMAGES.own,
      command: ['init'],
      environment: { TASKSTACK_TLS_HOSTS: own.join(',') },
      volumes: [`taskstack-ca:${CA_DIR}`],
    },
    ...Object.fromEntries(
      own.map((name) => [
        name,
        {
          build,
          image: IMAGES.own,
          command: [name],
          environment: {
            TASKSTACK_KEYS: secret('TASKSTACK_KEYS'),
            TASKSTACK_OPTIONS: JSON.stringify({ port: port(name), ...options[name] }),
          },
          ports: published(port(name)),
          volumes: [`taskstack-ca:${CA_DIR}:ro`, `${name}-data:/taskstack/state`],
          healthcheck: tcpCheck(port(name)),
          depends_on: {
            init: { condition: 'service_completed_successfully' },
            ...(name !== 'identity' && own.includes('identity') && { identity: healthy }),
            ...Object.fromEntries((backends[name] ?? []).flatMap((app) => (app ? [[app, healthy]] : []))),
          },
        },
      ]),
    ),
  };
}

/** The whole compose file as an object (emitted as YAML by generate.ts). */
export function composeFile(topology: Topology, apps: Apps) {
  const own = serviceNames.filter((name) => !MICROSOFT[name]);
  const settings = composeAppSettings(topology, apps);
  const appServices = Object.fromEntries(
    Object.entries(apps).map(([name, app]) => {
      const named = Object.values(app.settings).flatMap((value) => settingReference(value)?.service ?? []);
      // Reading the vault is reading what its secrets hold (web-b's tasks: Cosmos DB, through DocumentDbConnection).
      const behindVault = named.includes('keyvault')
        ? Object.values(VAULT_SECRETS_FROM).flatMap((key) => settingReference(`@${key}`)?.service ?? [])
        : [];
      const uses = [...named, ...behindVault];
      const identity = appIdentity(topology, name);
      const after = [...new Set([...uses, ...(identity ? ['identity'] : [])])].flatMap(
        (service) => SERVICE_OF_REFERENCE[service] ?? [],
      );
      const common = {
        ports: published(app.localPort, 80),
        volumes: [`./${stagedApp(name)}:/home/site/wwwroot:ro`, `taskstack-ca:${CA_DIR}:ro`],
        // A web app is ready as App Service counts it; Microsoft's Functions host answers `/` once it runs.
        healthcheck: httpCheck(
          80,
          app.kind === 'webapp'
            ? readinessCheck(app.healthCheckPath)
            : { path: app.healthCheckPath ?? '/', lowest: 100, highest: 499 },
        ),
        depends_on: Object.fromEntries(after.map((service) => [service, healthy])),
      };
      // The local CA: our Key Vault, identity and Event Grid speak HTTPS, as Azure's do.
      const platform = { NODE_EXTRA_CA_CERTS: `${CA_DIR}/ca.pem` };
      if (app.kind === 'functionapp')
        return [
          name,
          {
            image: IMAGES.functionapp,
            environment: {
              ...settings[name],
              ...platform,
              AzureWebJobsScriptRoot: '/home/site/wwwroot',
              AzureFunctionsJobHost__Logging__Console__IsEnabled: 'true',
            },
            ...common,
          },
        ];
      // A web app runs as App Service (and the embedded stack's, emulators/appservice/) runs it: the file
      // Oryx would start, its settings by App Service's names, the site's variables, App Service's readiness.
      const site = platformSettings({ port: app.localPort, siteName: name, sku: hostingPlan.webapp.tier });
      return [
        name,
        {
          image: IMAGES.webapp,
          working_dir: '/home/site/wwwroot',
          command: ['node', startFile(join(repositoryRoot, app.folder))],
          environment: { ...environmentNames(settings[name] ?? {}), ...platform, ...site, PORT: '80' },
          ...common,
        },
      ];
    }),
  );
  return {
    services: {
      azurite: {
        image: IMAGES.azurite,
        // Table and queue too: the Event Hubs emulator keeps its metadata there.
        command: [
          'azurite',
          '--blobHost',
          '0.0.0.0',
          '--queueHost',
          '0.0.0.0',
          '--tableHost',
          '0.0.0.0',
          '--location',
          '/data',
          '--skipApiVersionCheck',
          '--loose',
        ],
        ports: published(DEFAULT_PORTS.blob),
        volumes: ['azurite-data:/data'],
        healthcheck: tcpCheck(10000),
      },
      cosmos: {
        image: IMAGES.cosmos,
        // The host the service advertises for endpoint discovery, which SDK clients then call: its default
        // names each client's own container. The compose service name is what the apps reach it by.
        environment: {
          GATEWAY_PUBLIC_ENDPOINT: new URL(composeValues(topology)['cosmos.endpoint'] as string).hostname,
        },
        ports: published(DEFAULT_PORTS.cosmos),
        healthcheck: bashTcpCheck(8081),
      },
      eventhubs: {
        image: IMAGES.eventhubs,
        environment: { BLOB_SERVER: 'azurite', METADATA_SERVER: 'azurite', ACCEPT_EULA: 'Y' },
        volumes: [`./${EVENTHUBS_CONFIG}:/Eventhubs_Emulator/ConfigFiles/Config.json:ro`],
        ports: published(DEFAULT_PORTS.eventhubs),
        healthcheck: bashTcpCheck(5672),
        depends_on: { azurite: healthy },
      },
      ...ownServices(topology, apps, own),
      ...appServices,
    },
    volumes: Object.fromEntries(
      ['azurite-data', 'taskstack-ca', ...own.map((name) => `${name}-data`)].map((volume) => [volume, {}]),
    ),
  };
}

/**
 * The target file for the compose stack (compose-target.ts writes it once the stack is up): the
 * published addresses on the host, and the keys compose-env.ts gave it.
 */
export function composeTargetFile(topology: Topology, apps: Apps, secrets: StackSecrets) {
  const services = composeFile(topology, apps).services as Record<string, unknown>;
  const url = (app: string) => `http://127.0.0.1:${apps[app]?.localPort}`;
  const kindOf = (kind: string) => Object.keys(apps).find((app) => apps[app]?.kind === kind);
  const functionsApp = kindOf('functionapp');
  const webApp = kindOf('webapp');
  return {
    target: 'compose',
    baseUrl: functionsApp && url(functionsApp),
    webBaseUrl: webApp && url(webApp),
    gatewayUrl: services.gateway ? `https://127.0.0.1:${DEFAULT_PORTS.gateway}` : undefined,
    // The simulator serves APIM's developer portal under /developer (stack.json's portalUrl).
    portalUrl: services.gateway ? `https://127.0.0.1:${DEFAULT_PORTS.gateway}/developer` : undefined,
    authUrl: `https://127.0.0.1:${DEFAULT_PORTS.identity}`,
    subscriptionKey: services.gateway ? secrets.subscriptionKey : undefined,
    apps: Object.fromEntries(Object.keys(apps).map((app) => [app, { url: url(app) }])),
    secrets: { EncryptionKey: secrets.encryptionKey },
  };
}
