import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadApps, repositoryRoot, settingReference } from '../../emulators/core/apps.ts';
import { loadSecrets } from '../../emulators/core/secrets.ts';
import { testDataDir } from '../../emulators/core/testing.ts';
import { loadTopology } from '../../emulators/core/topology.ts';
import { armParameters, armTemplate, azureValues, siteSettings } from './arm.ts';
import { WELL_KNOWN } from './compose.ts';
import { generatedFiles } from './generate.ts';
import { ENVIRONMENTS, parametersFile, TEMPLATE } from './paths.ts';

const topology = loadTopology();
const apps = loadApps();

interface Resource {
  type: string;
  name: string;
  condition?: string;
  properties?: Record<string, unknown> & { appSettings?: unknown };
  identity?: { type: string };
  sku?: { name: string };
  dependsOn?: string[];
}
const template = JSON.parse(readFileSync(join(repositoryRoot, TEMPLATE), 'utf8'));
const resources = template.resources as Resource[];
const ofType = (type: string) => resources.filter((resource) => resource.type === type);
/** The one resource of a type whose name expression names `part` (a whole name: `web` is not `web-b`). */
const named = (type: string, part: string) => {
  const found = ofType(type).filter(
    (resource) => resource.name.includes(`/${part}'`) || resource.name.includes(`'{0}-${part}-{1}'`),
  );
  expect(found, `${type} ${part}`).toHaveLength(1);
  return found[0] as Resource;
};
const site = (app: string) => named('Microsoft.Web/sites', app);
const settingsOf = (app: string) =>
  Object.fromEntries(
    (
      (site(app).properties?.siteConfig as { appSettings: { name: string; value: string }[] }).appSettings ??
      []
    ).map((setting) => [setting.name, setting.value]),
  );

/** Every `resourceId('…', …)` call in a text, with balanced parentheses. */
function resourceIdCalls(text: string): string[] {
  const calls: string[] = [];
  for (
    let start = text.indexOf("resourceId('");
    start >= 0;
    start = text.indexOf("resourceId('", start + 1)
  ) {
    if (/[A-Za-z]$/.test(text.slice(0, start))) continue; // subscriptionResourceId(…)
    let depth = 0;
    for (let end = start + 'resourceId'.length; end < text.length; end++) {
      if (text[end] === '(') depth++;
      if (text[end] === ')' && --depth === 0) {
        calls.push(text.slice(start, end + 1));
        break;
      }
    }
  }
  return calls;
}

describe('the ARM template (system/deploy/azure/template.json)', () => {
  it('is exactly what system/deploy/generate.ts writes, and so are the parameters files', () => {
    const files = generatedFiles();
    for (const path of [TEMPLATE, parametersFile('dev'), parametersFile('prod')])
      expect(readFileSync(join(repositoryRoot, path), 'utf8'), path).toBe(files[path]);
  });

  it('names every resource from the prefix, so environments deployed to one resource group share none', () => {
    // `variables('x')` stands for its expression: the name is what ARM would build from the parameters.
    const variables = template.variables as Record<string, string>;
    const expand = (text: string): string =>
      text.replace(/variables\('(\w+)'\)/g, (_, name: string) =>
        expand((variables[name] as string).slice(1, -1)),
      );
    expect(
      new Set(
        Object.values(ENVIRONMENTS.map((environment) => armParameters(environment).parameters.prefix.value)),
      ).size,
    ).toBe(ENVIRONMENTS.length);
    for (const resource of resources)
      expect(expand(resource.name), `${resource.type} ${resource.name}`).toContain("parameters('prefix')");
  });

  it('has the storage account, its containers and the ArchiveOldFiles rule as the topology declares them', () => {
    expect(ofType('Microsoft.Storage/storageAccounts')).toHaveLength(1);
    for (const container of topology.storage.containers)
      named('Microsoft.Storage/storageAccounts/blobServices/containers', container);
    const [policy] = ofType('Microsoft.Storage/storageAccounts/managementPolicies');
    expect(policy?.properties).toEqual(topology.storage.managementPolicy);
    expect(JSON.stringify(policy)).toContain('"name":"ArchiveOldFiles"');
  });

  it('has Cosmos DB with TasksDB, Tasks and leases, and the data-contributor role for the function app', () => {
    named('Microsoft.DocumentDB/databaseAccounts/sqlDatabases', 'TasksDB');
    for (const container of ['Tasks', 'leases'])
      expect(
        named('Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers', container).properties,
      ).toEqual({
        resource: { id: container, partitionKey: { paths: ['/id'], kind: 'Hash' } },
      });
    const [assignment] = ofType('Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments');
    expect(assignment?.properties?.roleDefinitionId).toContain("'00000000-0000-0000-0000-000000000002'");
    expect(assignment?.properties?.principalId).toContain("'{0}-functions-{1}'");
  });

  it('has the vault with Get/List access for both identities and each secret of the topology, values never literal', () => {
    const [vault] = ofType('Microsoft.KeyVault/vaults');
    const policies = vault?.properties?.accessPolicies as { objectId: string; permissions: unknown }[];
    const appsWithAccess = topology.keyVault.accessPolicies.map(
      (policy) => topology.identities[policy.identity]?.app,
    );
    expect(policies.map((policy) => policy.objectId.match(/'\{0\}-([\w-]+)-\{1\}'/)?.[1]).sort()).toEqual(
      appsWithAccess.sort(),
    );
    // A Key Vault reference resolves with the site's own identity: it needs an access policy.
    for (const app of Object.keys(apps))
      if (Object.values(settingsOf(app)).some((value) => value.includes('@Microsoft.KeyVault(')))
        expect(appsWithAccess, app).toContain(app);
    for (const policy of policies) expect(policy.permissions).toEqual({ secrets: ['get', 'list'] });
    for (const secret of topology.keyVault.secrets) {
      const value = named('Microsoft.KeyVault/vaults/secrets', secret).properties?.value as string;
      expect(value, secret).toMatch(/^\[.*\]$/);
      if (template.parameters[secret]) expect(template.parameters[secret].type).toBe('securestring');
    }
    expect(template.parameters.EncryptionKey).toEqual(expect.objectContaining({ type: 'securestring' }));
    expect(template.parameters.EncryptionKey.defaultValue).toBeUndefined();
  });

  it('has the Basic Event Hubs namespace with taskevents (2 partitions, 1 day) and the data roles', () => {
    expect(ofType('Microsoft.EventHub/namespaces')[0]?.sku?.name).toBe('Basic');
    expect(named('Microsoft.EventHub/namespaces/eventhubs', 'taskevents').properties).toEqual({
      partitionCount: 2,
      messageRetentionInDays: 1,
    });
    const roles = ofType('Microsoft.Authorization/roleAssignments').map(
      (assignment) => assignment.properties?.roleDefinitionId,
    );
    expect(roles).toEqual([
      expect.stringContaining('a638d3c7-ab3a-418d-83e6-5f17a39d4fde'),
      expect.stringContaining('2b629674-e913-4c01-ae53-ef4638d8f975'),
    ]);
  });

  it('has the Event Grid topic and taskcreatedsub delivering to TaskCreatedNotification', () => {
    named('Microsoft.EventGrid/topics', 'taskcreatedtopic');
    const subscription = named('Microsoft.EventGrid/topics/eventSubscriptions', 'taskcreatedsub');
    expect(subscription.properties).toMatchObject({
      destination: { endpointType: 'AzureFunction' },
      filter: { includedEventTypes: ['Microsoft.DocumentDB.DocumentCreated'] },
    });
    expect(JSON.stringify(subscription.properties)).toContain('/functions/TaskCreatedNotification');
  });

  it('assigns EventGrid Data Sender on the topic to the identities the topology names, none today (the function app publishes with the key)', () => {
    expect(topology.eventGrid.topics.flatMap((topic) => topic.roleAssignments)).toEqual([]);
    const topics = topology.eventGrid.topics.map((topic) => ({
      ...topic,
      roleAssignments: [{ identity: 'webApp', role: 'EventGrid Data Sender' as const }],
    }));
    const granted = armTemplate({ ...topology, eventGrid: { topics } }, apps).resources as Resource[];
    const assignments = granted.filter(
      (resource) =>
        resource.type === 'Microsoft.Authorization/roleAssignments' &&
        JSON.stringify(resource).includes('d5a91429-5739-47e2-a06b-3470a27159e7'),
    );
    expect(assignments).toEqual([
      {
        type: 'Microsoft.Authorization/roleAssignments',
        apiVersion: '2022-04-01',
        scope:
          "[format('Microsoft.EventGrid/topics/{0}', format('{0}-taskcreatedtopic-{1}', parameters('prefix'), variables('suffix')))]",
        name: "[guid(resourceId('Microsoft.EventGrid/topics', format('{0}-taskcreatedtopic-{1}', parameters('prefix'), variables('suffix'))), 'webApp', 'd5a91429-5739-47e2-a06b-3470a27159e7')]",
        properties: {
          roleDefinitionId:
            "[subscriptionResourceId('Microsoft.Authorization/roleDefinitions', 'd5a91429-5739-47e2-a06b-3470a27159e7')]",
          principalId:
            "[reference(resourceId('Microsoft.Web/sites', format('{0}-web-{1}', parameters('prefix'), variables('suffix'))), '2023-12-01', 'Full').identity.principalId]",
          principalType: 'ServicePrincipal',
        },
        dependsOn: [
          "[resourceId('Microsoft.EventGrid/topics', format('{0}-taskcreatedtopic-{1}', parameters('prefix'), variables('suffix')))]",
          "[resourceId('Microsoft.Web/sites', format('{0}-web-{1}', parameters('prefix'), variables('suffix')))]",
        ],
      },
    ]);
  });

  it('asks for what ARM cannot create and the apps name (registrations, the session secret), with no default, and nothing more', () => {
    const named = new Set(
      Object.values(apps).flatMap((app) =>
        Object.values(app.settings).flatMap((value) => {
          const key = settingReference(value)?.key ?? '';
          return /^(directory|stack)\./.test(key) ? [key] : [];
        }),
      ),
    );
    expect(named.size).toBeGreaterThan(0);
    const parameterOf = (key: string) => {
      const [service, application, part] = key.split('.') as [string, string, string?];
      return service === 'stack'
        ? application
        : `${application}${part === 'clientId' ? 'ClientId' : 'ClientSecret'}`;
    };
    for (const key of named) {
      const parameter = template.parameters[parameterOf(key)];
      expect(parameter, key).toBeDefined();
      expect(parameter.defaultValue, key).toBeUndefined();
      expect(parameter.type, key).toBe(/clientId$/.test(key) ? 'string' : 'securestring');
    }
    const expected = new Set([...named].map(parameterOf));
    const asked = Object.keys(template.parameters).filter(
      (parameter) => /(ClientId|ClientSecret)$/.test(parameter) && !parameter.startsWith('Entra'),
    );
    expect(asked.filter((parameter) => !expected.has(parameter))).toEqual([]);
    if (!named.has('stack.sessionSecret')) expect(template.parameters.sessionSecret).toBeUndefined();
  });

  it('has one site per app of apps.json, with a system-assigned identity and its settings by the spec names', () => {
    expect(ofType('Microsoft.Web/sites')).toHaveLength(Object.keys(apps).length);
    for (const [app, declaration] of Object.entries(apps)) {
      expect(site(app).identity).toEqual({ type: 'SystemAssigned' });
      expect(Object.keys(settingsOf(app))).toEqual(expect.arrayContaining(Object.keys(declaration.settings)));
    }
    const functions = settingsOf('functions');
    expect(functions.DocumentDbConnection).toBe(
      "[format('@Microsoft.KeyVault(VaultName={0};SecretName=DocumentDbConnection)', variables('vaultName'))]",
    );
    expect(functions.FUNCTIONS_WORKER_RUNTIME).toBe('node');
    expect(functions.KeyVaultDisableChallengeResourceVerification).toBe('false');
  });

  it("names Node 20 as each host's stacks do: Functions `Node|20`, App Service `NODE|20-lts`", () => {
    const runtime = { functionapp: 'Node|20', webapp: 'NODE|20-lts' };
    for (const [app, declaration] of Object.entries(apps))
      expect((site(app).properties?.siteConfig as { linuxFxVersion: string }).linuxFxVersion, app).toBe(
        runtime[declaration.kind],
      );
  });

  it('keeps web apps loaded (Always On), as the local host does: web app A holds its tasks in memory', () => {
    const alwaysOn = (app: string) => (site(app).properties?.siteConfig as { alwaysOn?: boolean }).alwaysOn;
    // Consumption function apps are woken by the platform; Always On is for dedicated plans only.
    for (const [app, declaration] of Object.entries(apps))
      expect(alwaysOn(app), app).toBe(declaration.kind === 'webapp' ? true : undefined);
  });

  it('sets App Service health check only on a web app whose apps.json entry declares a path', () => {
    const siteConfig = (resource: Resource) =>
      resource.properties?.siteConfig as { healthCheckPath?: string };
    // None declares one today: web-b answers an anonymous `/` with a redirect to sign-in, which Azure counts unhealthy.
    for (const [app, declaration] of Object.entries(apps)) {
      expect(declaration.healthCheckPath, app).toBeUndefined();
      expect(siteConfig(site(app)), app).not.toHaveProperty('healthCheckPath');
    }
    const declared = armTemplate(topology, {
      ...apps,
      web: { ...(apps.web as (typeof apps)[string]), healthCheckPath: '/health' },
    });
    const sites = (declared.resources as Resource[]).filter(
      (resource) => resource.type === 'Microsoft.Web/sites',
    );
    expect(
      Object.fromEntries(sites.map((resource) => [resource.name, siteConfig(resource).healthCheckPath])),
    ).toEqual({
      "[format('{0}-functions-{1}', parameters('prefix'), variables('suffix'))]": undefined,
      "[format('{0}-web-{1}', parameters('prefix'), variables('suffix'))]": '/health',
      "[format('{0}-web-b-{1}', parameters('prefix'), variables('suffix'))]": undefined,
    });
  });

  it("gives web app B Microsoft Graph's address, not ARM's environment().graph (Azure AD Graph, retired)", () => {
    expect(apps['web-b']?.settings.GraphBaseUrl).toBe('@identity.graph');
    expect(settingsOf('web-b').GraphBaseUrl).toBe('https://graph.microsoft.com/v1.0');
  });

  it('contains no secret: no generated key, no emulator key, every setting either an expression or a short literal', async () => {
    const data = testDataDir();
    const secrets = await loadSecrets(data.dir, topology);
    data.remove();
    const text = JSON.stringify(template);
    for (const value of [
      secrets.encryptionKey,
      secrets.eventGridKey,
      secrets.storageKey,
      ...Object.values(WELL_KNOWN),
    ])
      expect(text).not.toContain(value);
    // A literal is apps.json's own (committed, no reference), arm.ts's own for a reference (a public
    // address), or a short platform setting.
    const values = azureValues(topology);
    for (const [app, declaration] of Object.entries(apps))
      for (const [setting, value] of Object.entries(settingsOf(app))) {
        const declared = declaration.settings[setting];
        const key = settingReference(declared ?? '')?.key;
        const literal = declared !== undefined && (key ? values[key]?.value === value : value === declared);
        expect(value.startsWith('[') || literal || value.length < 16, `${app} ${setting}`).toBe(true);
      }
  });

  it('lists in dependsOn every resource of the template that a resource refers to', () => {
    const types = new Set(resources.map((resource) => resource.type));
    for (const resource of resources) {
      const { dependsOn = [], ...body } = resource;
      for (const call of resourceIdCalls(JSON.stringify(body))) {
        const type = call.match(/^resourceId\('([^']+)'/)?.[1] as string;
        if (types.has(type))
          expect(dependsOn, `${resource.type} ${resource.name} → ${call}`).toContain(`[${call}]`);
      }
      for (const dependency of dependsOn)
        expect(types, dependency).toContain(dependency.match(/^\[resourceId\('([^']+)'/)?.[1]);
    }
  });

  it('has API Management as system/gateway/ declares it: both APIs, every policy byte for byte, product, subscriptions, EntraID', () => {
    expect(ofType('Microsoft.ApiManagement/service')[0]?.sku?.name).toBe('Developer');
    const apis = ofType('Microsoft.ApiManagement/service/apis');
    expect(apis.map((api) => api.properties?.displayName)).toEqual([
      'TaskManagerFunctionsAPI',
      'TaskManagerWebAPI',
    ]);
    for (const api of apis) {
      expect(api.properties).toMatchObject({
        subscriptionRequired: true,
        subscriptionKeyParameterNames: { header: 'Ocp-Gateway-Subscription-Key' },
        format: 'openapi+json',
      });
      const suffix = api.properties?.path === 'functions' ? 'functions' : 'web';
      expect(api.properties?.value).toBe(
        readFileSync(join(repositoryRoot, `openapi/gateway-${suffix}.json`), 'utf8'),
      );
    }
    const gateway = join(repositoryRoot, 'system/gateway');
    const policies = resources.filter((resource) =>
      /ApiManagement\/service\/(.+\/)?(policies|policyFragments)$/.test(resource.type),
    );
    const xml = (path: string) => readFileSync(join(gateway, path), 'utf8');
    const expected = [
      'policies/global.xml',
      'policies/apis/task-manager-functions-api.xml',
      'policies/apis/task-manager-functions-api/ManageTask.xml',
      'policies/apis/task-manager-web-api.xml',
      'policy-fragments/validate-entra-token.xml',
    ].map(xml);
    expect(policies.map((policy) => policy.properties?.value).sort()).toEqual(expected.sort());
    named('Microsoft.ApiManagement/service/products/apis', 'task-manager-functions-api');
    named('Microsoft.ApiManagement/service/products/apis', 'task-manager-web-api');
    const allApis = named('Microsoft.ApiManagement/service/subscriptions', 'task-manager-all-apis');
    expect(allApis.properties?.scope).toMatch(/'\/apis'\)\]$/);
    const server = named('Microsoft.ApiManagement/service/authorizationServers', 'EntraID');
    expect(server.properties?.defaultScope).toBe(
      "[concat('api://', parameters('EntraClientId'), '/user_impersonation')]",
    );
    expect(server.properties?.clientSecret).toBe("[concat(parameters('EntraClientSecret'))]");
    expect(template.parameters.EntraClientSecret.type).toBe('securestring');
    // The function key exists once the code runs: it and the policy sending it come with the second deployment.
    expect(named('Microsoft.ApiManagement/service/namedValues', 'FunctionKey').condition).toBe(
      "[parameters('codeDeployed')]",
    );
  });

  it('deploys the sites only in the first run: the second (codeDeployed=true) leaves them and their settings as the zip deploy left them', () => {
    /** The resources a run deploys, given codeDeployed; a condition other than these two fails the test. */
    const deployed = (codeDeployed: boolean) =>
      resources.filter((resource) => {
        if (resource.condition === undefined) return true;
        if (resource.condition === "[parameters('codeDeployed')]") return codeDeployed;
        if (resource.condition === "[not(parameters('codeDeployed'))]") return !codeDeployed;
        throw new Error(`${resource.type} ${resource.name}: unexpected condition ${resource.condition}`);
      });
    const typesIn = (run: Resource[]) => run.map((resource) => resource.type);
    const first = deployed(false);
    const second = deployed(true);
    expect(first.filter((resource) => resource.type === 'Microsoft.Web/sites')).toHaveLength(
      Object.keys(apps).length,
    );
    for (const app of Object.keys(apps))
      expect(site(app).condition, app).toBe("[not(parameters('codeDeployed'))]");
    // A site's PUT replaces its whole app settings list (and with it WEBSITE_RUN_FROM_PACKAGE): none in the second run.
    expect(typesIn(second)).not.toContain('Microsoft.Web/sites');
    expect(JSON.stringify(second)).not.toContain('appSettings');
    // …which still creates what needs the code, reading the existing function app by resourceId.
    const subscription = named('Microsoft.EventGrid/topics/eventSubscriptions', 'taskcreatedsub');
    const functionKey = named('Microsoft.ApiManagement/service/namedValues', 'FunctionKey');
    expect(second).toContain(subscription);
    expect(second).toContain(functionKey);
    expect(first).not.toContain(subscription);
    expect(first).not.toContain(functionKey);
    expect(functionKey.properties?.value).toBe(
      "[listKeys(format('{0}/host/default', resourceId('Microsoft.Web/sites', format('{0}-functions-{1}', parameters('prefix'), variables('suffix')))), '2023-12-01').functionKeys.default]",
    );
    // Every run-time lookup names its resource by resourceId, which ARM resolves for a resource it skips.
    const text = JSON.stringify({ second, outputs: template.outputs });
    expect(
      text.match(/(reference|listKeys)\((?!resourceId\(|format\('\{0\}\/host\/default', resourceId\()/g),
    ).toBeNull();
  });

  it("makes a Key Vault reference given by value to the stack's vault one to the deployment's vault", () => {
    // Locally `taskstack` is the stack's vault; in Azure a vault of that name is nobody's of this system.
    const settings = {
      ByName: '@Microsoft.KeyVault(VaultName=taskstack;SecretName=EncryptionKey)',
      Pinned: '@Microsoft.KeyVault(VaultName=TaskStack;SecretName=EncryptionKey;SecretVersion=0123abcd)',
      ByUri: '@Microsoft.KeyVault(SecretUri=https://taskstack.vault.azure.net/secrets/EncryptionKey/)',
      Elsewhere: '@Microsoft.KeyVault(VaultName=othervault;SecretName=EncryptionKey)',
    };
    const values = Object.fromEntries(
      siteSettings(topology, 'web', settings).settings.map((setting) => [setting.name, setting.value]),
    );
    expect(values).toEqual({
      ByName:
        "[format('@Microsoft.KeyVault(VaultName={0};SecretName=EncryptionKey)', variables('vaultName'))]",
      Pinned:
        "[format('@Microsoft.KeyVault(VaultName={0};SecretName=EncryptionKey;SecretVersion=0123abcd)', variables('vaultName'))]",
      ByUri:
        "[format('@Microsoft.KeyVault(VaultName={0};SecretName=EncryptionKey)', variables('vaultName'))]",
      Elsewhere: settings.Elsewhere,
    });
  });

  it('refuses a setting that names something Azure does not provide', () => {
    const broken = {
      ...apps,
      functions: { ...(apps.functions as (typeof apps)[string]), settings: { X: '@cosmos.nothing' } },
    };
    expect(() => armTemplate(topology, broken)).toThrow(
      'app functions: setting X names @cosmos.nothing, which the template does not provide',
    );
  });
});
