/**
 * The Azure side of the one description: an ARM template derived from system/topology.json (the
 * resources) and system/apps.json (one site per app, its settings by the spec's names). Names are
 * built from a `prefix` parameter and the resource group; no secret value is ever in the template:
 * vault secrets are secure parameters or derived from the resources themselves (listKeys), and app
 * settings that name a vault secret are Key Vault references.
 */
import {
  type Apps,
  hostingPlan,
  LOCAL_VAULT_NAME,
  settingReference,
  vaultSecretOf,
} from '../../emulators/core/apps.ts';
import { parseKeyVaultReference } from '../../emulators/core/keyvault-references.ts';
import type { Topology } from '../../emulators/core/topology.ts';
import { apimResources } from './apim.ts';

const API = {
  storage: '2023-05-01',
  cosmos: '2024-08-15',
  vault: '2023-07-01',
  eventHubs: '2024-01-01',
  eventGrid: '2022-06-15',
  web: '2023-12-01',
  authorization: '2022-04-01',
} as const;

/**
 * Node 20 as each host names it: Functions' stacks say `Node|20`, App Service's `NODE|20-lts` (`az webapp
 * list-runtimes --os linux`); a web app given the Functions form gets no Node image it knows.
 */
const LINUX_FX_VERSION = { functionapp: 'Node|20', webapp: 'NODE|20-lts' } as const;

/** Built-in role ids (the same in every tenant). */
const COSMOS_ROLES: Record<string, string> = {
  'Cosmos DB Built-in Data Reader': '00000000-0000-0000-0000-000000000001',
  'Cosmos DB Built-in Data Contributor': '00000000-0000-0000-0000-000000000002',
};
const AZURE_ROLES: Record<string, string> = {
  'Azure Event Hubs Data Owner': 'f526a384-b230-433a-b45c-95f59c4a2dec',
  'Azure Event Hubs Data Sender': '2b629674-e913-4c01-ae53-ef4638d8f975',
  'Azure Event Hubs Data Receiver': 'a638d3c7-ab3a-418d-83e6-5f17a39d4fde',
  'EventGrid Data Sender': 'd5a91429-5739-47e2-a06b-3470a27159e7',
};

/** Resource names (ARM expressions), unique per resource group. */
const name = {
  storage: "[variables('storageName')]",
  cosmos: "[variables('cosmosName')]",
  vault: "[variables('vaultName')]",
  eventHubs: "[variables('eventHubsName')]",
  topic: (topic: string) => `[format('{0}-${topic}-{1}', parameters('prefix'), variables('suffix'))]`,
  site: (app: string) => `[format('{0}-${app}-{1}', parameters('prefix'), variables('suffix'))]`,
  plan: (kind: string) => `[format('{0}-${kind}-plan-{1}', parameters('prefix'), variables('suffix'))]`,
};
/** The inside of an expression, to nest it in another. */
const inner = (expression: string) => expression.slice(1, -1);
const resourceId = (type: string, ...names: string[]) =>
  `resourceId('${type}', ${names.map((n) => (n.startsWith('[') ? inner(n) : `'${n}'`)).join(', ')})`;
const ids = {
  storage: resourceId('Microsoft.Storage/storageAccounts', name.storage),
  cosmos: resourceId('Microsoft.DocumentDB/databaseAccounts', name.cosmos),
  vault: resourceId('Microsoft.KeyVault/vaults', name.vault),
  eventHubs: resourceId('Microsoft.EventHub/namespaces', name.eventHubs),
  eventHubsRule: resourceId(
    'Microsoft.EventHub/namespaces/authorizationRules',
    name.eventHubs,
    'RootManageSharedAccessKey',
  ),
  topic: (topic: string) => resourceId('Microsoft.EventGrid/topics', name.topic(topic)),
  site: (app: string) => resourceId('Microsoft.Web/sites', name.site(app)),
  plan: (kind: string) => resourceId('Microsoft.Web/serverfarms', name.plan(kind)),
};
const principalOf = (app: string) => `reference(${ids.site(app)}, '${API.web}', 'Full').identity.principalId`;

/** Vault secrets the template derives from the resources it creates, instead of taking them as parameters. */
const DERIVED_SECRETS: Record<string, string> = {
  DocumentDbConnection: `[format('AccountEndpoint={0};AccountKey={1};', reference(${ids.cosmos}, '${API.cosmos}').documentEndpoint, listKeys(${ids.cosmos}, '${API.cosmos}').primaryMasterKey)]`,
};
const DERIVED_SECRET_DEPENDS: Record<string, string[]> = { DocumentDbConnection: [`[${ids.cosmos}]`] };

/** A registration's parameter: taskWeb's client id → taskWebClientId. */
export const directoryParameter = (application: string, part: 'clientId' | 'clientSecret') =>
  `${application}${part === 'clientId' ? 'ClientId' : 'ClientSecret'}`;

/** Where `taskstack deploy` and app-registrations.sh take a parameter from: EncryptionKey → TASKSTACK_ENCRYPTION_KEY. */
export const parameterVariable = (parameter: string) =>
  `TASKSTACK_${parameter.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()}`;

interface AzureValue {
  value: string;
  dependsOn: string[];
  /** The template parameter the value comes from, declared only when an app names the value. */
  parameter?: { name: string; type: 'string' | 'securestring'; description: string };
}
const given = (name: string, type: 'string' | 'securestring', description: string): AzureValue => ({
  value: `[parameters('${name}')]`,
  dependsOn: [],
  parameter: { name, type, description },
});

/** What `@service.value` stands for in Azure (the embedded stack's list: emulators/stack/wiring.ts), with what it needs deployed first. */
export function azureValues(topology: Topology): Record<string, AzureValue> {
  const on = (id: string) => [`[${id}]`];
  return {
    'storage.connectionString': {
      value: `[format('DefaultEndpointsProtocol=https;AccountName={0};AccountKey={1};EndpointSuffix={2}', ${inner(name.storage)}, listKeys(${ids.storage}, '${API.storage}').keys[0].value, environment().suffixes.storage)]`,
      dependsOn: on(ids.storage),
    },
    'storage.blobEndpoint': {
      value: `[reference(${ids.storage}, '${API.storage}').primaryEndpoints.blob]`,
      dependsOn: on(ids.storage),
    },
    'cosmos.connectionString': {
      value: DERIVED_SECRETS.DocumentDbConnection as string,
      dependsOn: on(ids.cosmos),
    },
    'cosmos.endpoint': {
      value: `[reference(${ids.cosmos}, '${API.cosmos}').documentEndpoint]`,
      dependsOn: on(ids.cosmos),
    },
    // By name, not reference(): the vault depends on the sites (its access policies name their identities).
    'keyvault.uri': {
      value: `[format('https://{0}{1}/', ${inner(name.vault)}, environment().suffixes.keyvaultDns)]`,
      dependsOn: [],
    },
    'keyvault.disableChallengeResourceVerification': { value: 'false', dependsOn: [] },
    'eventhubs.connectionString': {
      value: `[listKeys(${ids.eventHubsRule}, '${API.eventHubs}').primaryConnectionString]`,
      dependsOn: on(ids.eventHubs),
    },
    'eventhubs.fullyQualifiedNamespace': {
      value: `[format('{0}.servicebus.windows.net', ${inner(name.eventHubs)})]`,
      dependsOn: on(ids.eventHubs),
    },
    'identity.instance': { value: '[environment().authentication.loginEndpoint]', dependsOn: [] },
    'identity.tenantId': { value: '[subscription().tenantId]', dependsOn: [] },
    // Microsoft Graph (web app B calls /me with a Graph User.Read token). ARM's environment() has no
    // property for it: its graph and graphAudience are Azure AD Graph (graph.windows.net), retired.
    'identity.graph': { value: 'https://graph.microsoft.com/v1.0', dependsOn: [] },
    // What ARM cannot create comes in as parameters: app registrations (az ad app) and generated secrets.
    'stack.sessionSecret': given('sessionSecret', 'securestring', "Signs the web apps' cookies"),
    ...Object.fromEntries(
      Object.keys(topology.directory.applications).flatMap((application) => [
        [
          `directory.${application}.clientId`,
          given(
            directoryParameter(application, 'clientId'),
            'string',
            `Application (client) id of the ${application} registration (app-registrations.sh)`,
          ),
        ],
        [
          `directory.${application}.clientSecret`,
          given(
            directoryParameter(application, 'clientSecret'),
            'securestring',
            `Client secret of the ${application} registration (app-registrations.sh)`,
          ),
        ],
      ]),
    ),
    ...Object.fromEntries(
      topology.eventGrid.topics.flatMap((topic) => [
        [
          `eventgrid.${topic.name}.endpoint`,
          {
            value: `[reference(${ids.topic(topic.name)}, '${API.eventGrid}').endpoint]`,
            dependsOn: on(ids.topic(topic.name)),
          },
        ],
        [
          `eventgrid.${topic.name}.key`,
          {
            value: `[listKeys(${ids.topic(topic.name)}, '${API.eventGrid}').key1]`,
            dependsOn: on(ids.topic(topic.name)),
          },
        ],
      ]),
    ),
  };
}

/** A Key Vault reference to a secret of the deployment's vault (a version pins it). */
const vaultReference = (secret: string, version?: string) =>
  `[format('@Microsoft.KeyVault(VaultName={0};SecretName=${secret}${version ? `;SecretVersion=${version}` : ''})', ${inner(name.vault)})]`;

/**
 * A site's app settings: apps.json's, a vault secret's name as a Key Vault reference, plus the platform's.
 * A reference apps.json gives by value to the system's vault (LOCAL_VAULT_NAME) names the deployment's.
 */
export function siteSettings(topology: Topology, app: string, settings: Record<string, string>) {
  const values = azureValues(topology);
  const dependsOn = new Set<string>();
  const resolved = Object.entries(settings).map(([settingName, value]) => {
    const secret = vaultSecretOf(topology, settingName);
    if (secret) return { name: settingName, value: vaultReference(secret) };
    const byValue = parseKeyVaultReference(value);
    if (!('error' in byValue) && byValue.vaultName?.toLowerCase() === LOCAL_VAULT_NAME)
      return { name: settingName, value: vaultReference(byValue.secretName, byValue.version) };
    const reference = settingReference(value);
    if (!reference) return { name: settingName, value };
    const azure = values[reference.key];
    if (!azure)
      throw new Error(
        `app ${app}: setting ${settingName} names ${value}, which the template does not provide`,
      );
    for (const id of azure.dependsOn) dependsOn.add(id);
    return { name: settingName, value: azure.value };
  });
  return { settings: resolved, dependsOn: [...dependsOn] };
}

/** The parameters the apps' settings name (`@directory.…`, `@stack.…`), each required: a registration left empty would deploy a site that cannot sign anyone in. */
function referencedParameters(topology: Topology, apps: Apps) {
  const values = azureValues(topology);
  const named = Object.values(apps).flatMap((app) =>
    Object.values(app.settings).flatMap((value) => {
      const parameter = values[settingReference(value)?.key ?? '']?.parameter;
      return parameter ? [parameter] : [];
    }),
  );
  return Object.fromEntries(
    named.map(({ name, type, description }) => [name, { type, metadata: { description } }]),
  );
}

/** The template, as an object (emitted as JSON by generate.ts). */
export function armTemplate(topology: Topology, apps: Apps) {
  const appOf = (identity: string) => topology.identities[identity]?.app as string;
  const secrets = topology.keyVault.secrets;
  const secureParameters = secrets.filter((secret) => !DERIVED_SECRETS[secret]);
  const kinds = [...new Set(Object.values(apps).map((app) => app.kind))];
  const functionsApp = Object.entries(apps).find(([, app]) => app.kind === 'functionapp')?.[0];

  const storage = [
    {
      type: 'Microsoft.Storage/storageAccounts',
      apiVersion: API.storage,
      name: name.storage,
      location: "[parameters('location')]",
      sku: { name: 'Standard_LRS' },
      kind: 'StorageV2',
      properties: {
        minimumTlsVersion: 'TLS1_2',
        allowBlobPublicAccess: false,
        supportsHttpsTrafficOnly: true,
      },
    },
    ...topology.storage.containers.map((container) => ({
      type: 'Microsoft.Storage/storageAccounts/blobServices/containers',
      apiVersion: API.storage,
      name: `[format('{0}/default/${container}', ${inner(name.storage)})]`,
      properties: { publicAccess: 'None' },
      dependsOn: [`[${ids.storage}]`],
    })),
    {
      type: 'Microsoft.Storage/storageAccounts/managementPolicies',
      apiVersion: API.storage,
      name: `[format('{0}/default', ${inner(name.storage)})]`,
      properties: topology.storage.managementPolicy,
      dependsOn: [`[${ids.storage}]`],
    },
  ];

  const cosmos = [
    {
      type: 'Microsoft.DocumentDB/databaseAccounts',
      apiVersion: API.cosmos,
      name: name.cosmos,
      location: "[parameters('location')]",
      kind: 'GlobalDocumentDB',
      properties: {
        databaseAccountOfferType: 'Standard',
        locations: [{ locationName: "[parameters('location')]", failoverPriority: 0 }],
        consistencyPolicy: { defaultConsistencyLevel: 'Session' },
        capabilities: [{ name: 'EnableServerless' }],
      },
    },
    ...topology.cosmos.databases.flatMap((database) => {
      const databaseId = resourceId(
        'Microsoft.DocumentDB/databaseAccounts/sqlDatabases',
        name.cosmos,
        database.id,
      );
      return [
        {
          type: 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases',
          apiVersion: API.cosmos,
          name: `[format('{0}/${database.id}', ${inner(name.cosmos)})]`,
          properties: { resource: { id: database.id } },
          dependsOn: [`[${ids.cosmos}]`],
        },
        ...database.containers.map((container) => ({
          type: 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers',
          apiVersion: API.cosmos,
          name: `[format('{0}/${database.id}/${container.id}', ${inner(name.cosmos)})]`,
          properties: {
            resource: {
              id: container.id,
              partitionKey: { paths: [container.partitionKeyPath], kind: 'Hash' },
            },
          },
          dependsOn: [`[${databaseId}]`],
        })),
      ];
    }),
    ...topology.cosmos.roleAssignments.map((assignment) => {
      const roleId = COSMOS_ROLES[assignment.role];
      if (!roleId) throw new Error(`unknown Cosmos DB role ${assignment.role}`);
      const app = appOf(assignment.identity);
      return {
        type: 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments',
        apiVersion: API.cosmos,
        name: `[format('{0}/{1}', ${inner(name.cosmos)}, guid(${ids.cosmos}, '${assignment.identity}', '${roleId}'))]`,
        properties: {
          roleDefinitionId: `[${resourceId('Microsoft.DocumentDB/databaseAccounts/sqlRoleDefinitions', name.cosmos, roleId)}]`,
          principalId: `[${principalOf(app)}]`,
          scope: `[${ids.cosmos}]`,
        },
        dependsOn: [`[${ids.cosmos}]`, `[${ids.site(app)}]`],
      };
    }),
  ];

  const vault = [
    {
      type: 'Microsoft.KeyVault/vaults',
      apiVersion: API.vault,
      name: name.vault,
      location: "[parameters('location')]",
      properties: {
        tenantId: '[subscription().tenantId]',
        sku: { family: 'A', name: 'standard' },
        enableRbacAuthorization: false,
        accessPolicies: topology.keyVault.accessPolicies.map((policy) => ({
          tenantId: '[subscription().tenantId]',
          objectId: `[${principalOf(appOf(policy.identity))}]`,
          permissions: { secrets: policy.permissions.secrets.map((permission) => permission.toLowerCase()) },
        })),
      },
      dependsOn: topology.keyVault.accessPolicies.map((policy) => `[${ids.site(appOf(policy.identity))}]`),
    },
    ...secrets.map((secret) => ({
      type: 'Microsoft.KeyVault/vaults/secrets',
      apiVersion: API.vault,
      name: `[format('{0}/${secret}', ${inner(name.vault)})]`,
      properties: { value: DERIVED_SECRETS[secret] ?? `[parameters('${secret}')]` },
      dependsOn: [`[${ids.vault}]`, ...(DERIVED_SECRET_DEPENDS[secret] ?? [])],
    })),
  ];

  /** An Azure RBAC role for an identity's site, on one resource (`type`, its `name` and id expressions). */
  const roleAssignment = (
    assignment: { identity: string; role: string },
    type: string,
    resourceName: string,
    resourceId: string,
  ) => {
    const app = appOf(assignment.identity);
    const roleId = AZURE_ROLES[assignment.role] as string;
    return {
      type: 'Microsoft.Authorization/roleAssignments',
      apiVersion: API.authorization,
      scope: `[format('${type}/{0}', ${inner(resourceName)})]`,
      name: `[guid(${resourceId}, '${assignment.identity}', '${roleId}')]`,
      properties: {
        roleDefinitionId: `[subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '${roleId}')]`,
        principalId: `[${principalOf(app)}]`,
        principalType: 'ServicePrincipal',
      },
      dependsOn: [`[${resourceId}]`, `[${ids.site(app)}]`],
    };
  };

  const eventHubs = [
    {
      type: 'Microsoft.EventHub/namespaces',
      apiVersion: API.eventHubs,
      name: name.eventHubs,
      location: "[parameters('location')]",
      sku: { name: topology.eventHubs.sku, tier: topology.eventHubs.sku, capacity: 1 },
    },
    ...topology.eventHubs.hubs.map((hub) => ({
      type: 'Microsoft.EventHub/namespaces/eventhubs',
      apiVersion: API.eventHubs,
      name: `[format('{0}/${hub.name}', ${inner(name.eventHubs)})]`,
      properties: { partitionCount: hub.partitionCount, messageRetentionInDays: hub.messageRetentionInDays },
      dependsOn: [`[${ids.eventHubs}]`],
    })),
    ...topology.eventHubs.roleAssignments.map((assignment) =>
      roleAssignment(assignment, 'Microsoft.EventHub/namespaces', name.eventHubs, ids.eventHubs),
    ),
  ];

  const eventGrid = topology.eventGrid.topics.flatMap((topic) => [
    {
      type: 'Microsoft.EventGrid/topics',
      apiVersion: API.eventGrid,
      name: name.topic(topic.name),
      location: "[parameters('location')]",
      properties: { inputSchema: topic.inputSchema },
    },
    ...topic.roleAssignments.map((assignment) =>
      roleAssignment(assignment, 'Microsoft.EventGrid/topics', name.topic(topic.name), ids.topic(topic.name)),
    ),
    ...topic.subscriptions.map((subscription) => {
      const function_ = subscription.endpointType === 'AzureFunction';
      if (function_ && !functionsApp)
        throw new Error(`subscription ${subscription.name}: no function app in apps.json`);
      return {
        type: 'Microsoft.EventGrid/topics/eventSubscriptions',
        apiVersion: API.eventGrid,
        // Azure checks the function exists: created by a second deployment, after the zip deploy.
        condition: "[parameters('codeDeployed')]",
        name: `[format('{0}/${subscription.name}', ${inner(name.topic(topic.name))})]`,
        properties: {
          destination: function_
            ? {
                endpointType: 'AzureFunction',
                properties: {
                  resourceId: `[format('{0}/functions/${subscription.function}', ${ids.site(functionsApp as string)})]`,
                },
              }
            : { endpointType: 'WebHook', properties: { endpointUrl: subscription.endpointUrl } },
          filter: { includedEventTypes: subscription.eventTypes },
          eventDeliverySchema: subscription.eventDeliverySchema ?? topic.inputSchema,
        },
        dependsOn: [
          `[${ids.topic(topic.name)}]`,
          ...(function_ ? [`[${ids.site(functionsApp as string)}]`] : []),
        ],
      };
    }),
  ]);

  const webApp = Object.entries(apps).find(([, app]) => app.kind === 'webapp')?.[0];
  const siteUrl = (app: string) =>
    `format('https://{0}', reference(${ids.site(app)}, '${API.web}').defaultHostName)`;
  const loginEndpoint = 'environment().authentication.loginEndpoint';
  const apim = apimResources({
    known: {
      ...(functionsApp && {
        FunctionAppBaseUrl: siteUrl(functionsApp),
        FunctionKey: `listKeys(format('{0}/host/default', ${ids.site(functionsApp)}), '${API.web}').functionKeys.default`,
      }),
      ...(webApp && { WebAppBaseUrl: siteUrl(webApp) }),
      // {{AuthUrl}}/{{TenantId}}: the login endpoint without its trailing slash.
      AuthUrl: `take(${loginEndpoint}, sub(length(${loginEndpoint}), 1))`,
      TenantId: 'subscription().tenantId',
    },
    dependsOn: {
      ...(functionsApp && {
        FunctionAppBaseUrl: [ids.site(functionsApp)],
        FunctionKey: [ids.site(functionsApp)],
      }),
      ...(webApp && { WebAppBaseUrl: [ids.site(webApp)] }),
    },
    afterCode: ['FunctionKey'],
  });

  const plans = kinds.map((kind) => ({
    type: 'Microsoft.Web/serverfarms',
    apiVersion: API.web,
    name: name.plan(kind),
    location: "[parameters('location')]",
    kind: 'linux',
    sku: { ...hostingPlan[kind] },
    properties: { reserved: true },
  }));
  const sites = Object.entries(apps).map(([app, declaration]) => {
    const { settings, dependsOn } = siteSettings(topology, app, declaration.settings);
    const platform =
      declaration.kind === 'functionapp'
        ? [{ name: 'FUNCTIONS_EXTENSION_VERSION', value: '~4' }]
        : [{ name: 'SCM_DO_BUILD_DURING_DEPLOYMENT', value: 'false' }];
    return {
      type: 'Microsoft.Web/sites',
      apiVersion: API.web,
      // Only before the code: a site's PUT replaces all its app settings, and would drop the
      // WEBSITE_RUN_FROM_PACKAGE the zip deploy set (Azure/azure-cli#11718). The second run reads the
      // existing sites through resourceId(), which ARM evaluates even for a resource it skips.
      condition: "[not(parameters('codeDeployed'))]",
      name: name.site(app),
      location: "[parameters('location')]",
      kind: declaration.kind === 'functionapp' ? 'functionapp,linux' : 'app,linux',
      identity: { type: 'SystemAssigned' },
      properties: {
        serverFarmId: `[${ids.plan(declaration.kind)}]`,
        httpsOnly: true,
        siteConfig: {
          linuxFxVersion: LINUX_FX_VERSION[declaration.kind],
          // Only a declared path: App Service's check wants 2xx and follows no redirect (web-b's `/` redirects to sign-in).
          healthCheckPath: declaration.kind === 'webapp' ? declaration.healthCheckPath : undefined,
          // App Service unloads an idle app after 20 minutes, and web app A's tasks live in its memory; the
          // local host never unloads. Not on Consumption: the platform wakes function apps itself.
          alwaysOn: declaration.kind === 'webapp' ? true : undefined,
          appSettings: [...settings, ...platform],
        },
      },
      dependsOn: [`[${ids.plan(declaration.kind)}]`, ...dependsOn],
    };
  });

  return {
    $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#',
    contentVersion: '1.0.0.0',
    metadata: { generator: 'system/deploy/generate.ts from system/topology.json and system/apps.json' },
    parameters: {
      prefix: {
        type: 'string',
        defaultValue: 'taskstack',
        maxLength: 11,
        metadata: { description: 'Start of every resource name' },
      },
      location: { type: 'string', defaultValue: '[resourceGroup().location]' },
      codeDeployed: {
        type: 'bool',
        defaultValue: false,
        metadata: {
          description:
            "The apps' code is deployed: create what Azure checks against it (Event Grid subscriptions to functions, the function key API Management sends), and leave the sites and their settings as the zip deploy left them",
        },
      },
      ...apim.parameters,
      ...referencedParameters(topology, apps),
      ...Object.fromEntries(
        secureParameters.map((secret) => [
          secret,
          { type: 'securestring', metadata: { description: `Value of the vault secret ${secret}` } },
        ]),
      ),
    },
    variables: {
      suffix: '[uniqueString(resourceGroup().id)]',
      storageName: "[toLower(format('{0}{1}', parameters('prefix'), variables('suffix')))]",
      cosmosName: "[toLower(format('{0}-cosmos-{1}', parameters('prefix'), variables('suffix')))]",
      // From the prefix as every name, so that dev and prod in one resource group do not share (and
      // overwrite) one vault's access policies and secrets; prefix (≤ 11) + suffix (13) fits its 24.
      vaultName: "[format('{0}{1}', parameters('prefix'), variables('suffix'))]",
      eventHubsName: "[format('{0}-events-{1}', parameters('prefix'), variables('suffix'))]",
      apimName: "[format('{0}-apim-{1}', parameters('prefix'), variables('suffix'))]",
    },
    resources: [
      ...storage,
      ...cosmos,
      ...vault,
      ...eventHubs,
      ...eventGrid,
      ...plans,
      ...sites,
      ...apim.resources,
    ],
    outputs: {
      resourceGroup: { type: 'string', value: '[resourceGroup().name]' },
      storageAccount: { type: 'string', value: name.storage },
      cosmosAccount: { type: 'string', value: name.cosmos },
      keyVault: { type: 'string', value: name.vault },
      ...(apim.resources.length && {
        apimName: { type: 'string', value: "[variables('apimName')]" },
        gatewayUrl: {
          type: 'string',
          value:
            "[reference(resourceId('Microsoft.ApiManagement/service', variables('apimName')), '2023-05-01-preview').gatewayUrl]",
        },
      }),
      ...Object.fromEntries(
        Object.keys(apps).flatMap((app) => [
          [`${app}Name`, { type: 'string', value: name.site(app) }],
          [
            `${app}Url`,
            {
              type: 'string',
              value: `[format('https://{0}', reference(${ids.site(app)}, '${API.web}').defaultHostName)]`,
            },
          ],
        ]),
      ),
    },
  };
}

/** The parameters file of one environment: everything but the secure parameters (given at deploy time). */
export function armParameters(environment: string) {
  return {
    $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#',
    contentVersion: '1.0.0.0',
    parameters: { prefix: { value: environment === 'prod' ? 'taskstack' : `tasks${environment}` } },
  };
}
