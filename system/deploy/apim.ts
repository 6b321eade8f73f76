/**
 * API Management in the ARM template, from system/gateway/ as it is (the files gateway-sim enforces):
 * the service, named values, both APIs with their OpenAPI documents inlined, the policies at every
 * scope byte for byte, fragments, products, subscriptions and the authorization server. `{{Name}}` in a
 * field that is not a policy (serviceUrl, the OAuth endpoints) is resolved by ARM, since APIM resolves
 * named values only inside policies.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { repositoryRoot } from '../../emulators/core/apps.ts';

export const GATEWAY_DIR = join(repositoryRoot, 'system', 'gateway');
const API = '2023-05-01-preview';
const SERVICE = 'Microsoft.ApiManagement/service';

const read = (path: string) => readFileSync(join(GATEWAY_DIR, path), 'utf8');
const readJson = (path: string) => JSON.parse(read(path));
const list = (dir: string, ext: string) =>
  existsSync(join(GATEWAY_DIR, dir))
    ? readdirSync(join(GATEWAY_DIR, dir))
        .filter((file) => file.endsWith(ext))
        .sort()
    : [];

/** What the template knows about its resources, for the named values it can fill itself. */
export interface ApimContext {
  /** ARM expressions (inside `[...]`, without the brackets) of named values the template provides. */
  known: Record<string, string>;
  /** `resourceId(...)` expressions those depend on. */
  dependsOn: Record<string, string[]>;
  /** Named values that need the apps' code deployed first (created by the second deployment). */
  afterCode: string[];
}

interface NamedValue {
  name: string;
  properties: { displayName: string; secret: boolean };
}

export function apimResources(context: ApimContext) {
  if (!existsSync(GATEWAY_DIR)) return { resources: [], parameters: {} };
  const service = "[variables('apimName')]";
  const inner = "variables('apimName')";
  const serviceId = `resourceId('${SERVICE}', ${inner})`;
  const child = (path: string) => `[format('{0}/${path}', ${inner})]`;
  const named = (readJson('named-values.json').namedValues as NamedValue[]).map((value) => value.name);
  const expression = (name: string) => context.known[name] ?? `parameters('${name}')`;
  /** A field with `{{Name}}` becomes a concat() of its parts. */
  const resolve = (text: string): string => {
    if (!text.includes('{{')) return text;
    const parts = text.split(/\{\{(\w+)\}\}/);
    return `[concat(${parts
      .map((part, i) => (i % 2 ? expression(part) : `'${part.replace(/'/g, "''")}'`))
      .filter((part) => part !== "''")
      .join(', ')})]`;
  };
  const dependsOnValues = (text: string) =>
    [...text.matchAll(/\{\{(\w+)\}\}/g)]
      .flatMap((match) => context.dependsOn[match[1] as string] ?? [])
      .map((id) => `[${id}]`);
  const afterCode = "[parameters('codeDeployed')]";
  const policy = (xml: string) => ({ format: 'rawxml', value: xml });
  /** A policy naming a named value created later is created with it. */
  const policyCondition = (xml: string) =>
    context.afterCode.some((name) => xml.includes(`{{${name}}}`)) ? { condition: afterCode } : {};
  const namedValueIds = (xml: string) =>
    named
      .filter((name) => xml.includes(`{{${name}}}`))
      .map((name) => `[resourceId('${SERVICE}/namedValues', ${inner}, '${name}')]`);

  const parameters = Object.fromEntries(
    (readJson('named-values.json').namedValues as NamedValue[])
      .filter((value) => !context.known[value.name])
      .map((value) => [
        value.name,
        {
          type: value.properties.secret ? 'securestring' : 'string',
          metadata: { description: `API Management named value ${value.name}` },
        },
      ]),
  );

  const resources: Record<string, unknown>[] = [
    {
      type: SERVICE,
      apiVersion: API,
      name: service,
      location: "[parameters('location')]",
      // The developer portal (OAuth 2.0 sign-in, Try it) needs a tier that has one.
      sku: { name: 'Developer', capacity: 1 },
      properties: {
        publisherEmail: "[parameters('publisherEmail')]",
        publisherName: "[parameters('publisherName')]",
      },
    },
    ...(readJson('named-values.json').namedValues as NamedValue[]).map((value) => ({
      type: `${SERVICE}/namedValues`,
      apiVersion: API,
      name: child(value.name),
      ...(context.afterCode.includes(value.name) && { condition: afterCode }),
      properties: { ...value.properties, value: `[${expression(value.name)}]` },
      dependsOn: [`[${serviceId}]`, ...(context.dependsOn[value.name] ?? []).map((id) => `[${id}]`)],
    })),
    {
      type: `${SERVICE}/policies`,
      apiVersion: API,
      name: child('policy'),
      properties: policy(read('policies/global.xml')),
      dependsOn: [`[${serviceId}]`, ...namedValueIds(read('policies/global.xml'))],
    },
    ...list('policy-fragments', '.xml').map((file) => {
      const xml = read(`policy-fragments/${file}`);
      return {
        type: `${SERVICE}/policyFragments`,
        apiVersion: API,
        name: child(basename(file, '.xml')),
        ...policyCondition(xml),
        properties: policy(xml),
        dependsOn: [`[${serviceId}]`, ...namedValueIds(xml)],
      };
    }),
    ...list('authorization-servers', '.json').map((file) => {
      const server = readJson(`authorization-servers/${file}`);
      const text = JSON.stringify(server.properties);
      return {
        type: `${SERVICE}/authorizationServers`,
        apiVersion: API,
        name: child(server.name),
        properties: Object.fromEntries(
          Object.entries(server.properties as Record<string, unknown>).map(([key, value]) => [
            key,
            typeof value === 'string' ? resolve(value) : value,
          ]),
        ),
        dependsOn: [`[${serviceId}]`, ...dependsOnValues(text)],
      };
    }),
    ...list('apis', '.json').flatMap((file) => {
      const api = readJson(`apis/${file}`);
      const { value, format, ...properties } = api.properties;
      if (format !== 'openapi+json-link')
        throw new Error(`apis/${file}: format ${format} is not one the template can inline`);
      const document = readFileSync(join(GATEWAY_DIR, 'apis', value), 'utf8');
      const apiId = `resourceId('${SERVICE}/apis', ${inner}, '${api.name}')`;
      const authServers = properties.authenticationSettings?.oAuth2?.authorizationServerId;
      const apiPolicy = `policies/apis/${api.name}.xml`;
      const operationDir = `policies/apis/${api.name}`;
      return [
        {
          type: `${SERVICE}/apis`,
          apiVersion: API,
          name: child(api.name),
          properties: {
            ...properties,
            serviceUrl: resolve(properties.serviceUrl),
            format: 'openapi+json',
            value: document,
          },
          dependsOn: [
            `[${serviceId}]`,
            ...dependsOnValues(properties.serviceUrl),
            ...(authServers
              ? [`[resourceId('${SERVICE}/authorizationServers', ${inner}, '${authServers}')]`]
              : []),
          ],
        },
        ...(existsSync(join(GATEWAY_DIR, apiPolicy))
          ? [
              {
                type: `${SERVICE}/apis/policies`,
                apiVersion: API,
                name: child(`${api.name}/policy`),
                ...policyCondition(read(apiPolicy)),
                properties: policy(read(apiPolicy)),
                dependsOn: [`[${apiId}]`, ...namedValueIds(read(apiPolicy))],
              },
            ]
          : []),
        ...list(operationDir, '.xml').map((operationFile) => {
          const xml = read(`${operationDir}/${operationFile}`);
          return {
            type: `${SERVICE}/apis/operations/policies`,
            apiVersion: API,
            // Operations are created by the API's import, named by their OpenAPI operationId.
            name: child(`${api.name}/${basename(operationFile, '.xml')}/policy`),
            ...policyCondition(xml),
            properties: policy(xml),
            dependsOn: [`[${apiId}]`, ...namedValueIds(xml)],
          };
        }),
      ];
    }),
    ...(
      readJson('products.json').products as { name: string; properties: unknown; apis: string[] }[]
    ).flatMap((product) => [
      {
        type: `${SERVICE}/products`,
        apiVersion: API,
        name: child(product.name),
        properties: product.properties,
        dependsOn: [`[${serviceId}]`],
      },
      ...product.apis.map((api) => ({
        type: `${SERVICE}/products/apis`,
        apiVersion: API,
        name: child(`${product.name}/${api}`),
        dependsOn: [
          `[resourceId('${SERVICE}/products', ${inner}, '${product.name}')]`,
          `[resourceId('${SERVICE}/apis', ${inner}, '${api}')]`,
        ],
      })),
    ]),
    ...(
      readJson('subscriptions.json').subscriptions as { name: string; properties: { scope: string } }[]
    ).map((subscription) => {
      const [, kind, target] = subscription.properties.scope.split('/');
      return {
        type: `${SERVICE}/subscriptions`,
        apiVersion: API,
        name: child(subscription.name),
        properties: {
          ...subscription.properties,
          scope: `[concat(${serviceId}, '${subscription.properties.scope}')]`,
        },
        dependsOn: [
          `[${serviceId}]`,
          ...(target ? [`[resourceId('${SERVICE}/${kind}', ${inner}, '${target}')]`] : []),
        ],
      };
    }),
  ];
  return {
    resources,
    parameters: {
      publisherEmail: { type: 'string', metadata: { description: 'API Management publisher e-mail' } },
      publisherName: { type: 'string', defaultValue: 'Task Management Service' },
      ...parameters,
    },
  };
}

/** The subscription whose scope is All APIs (its key is a target's `subscriptionKey`). */
export function allApisSubscription(): string | undefined {
  if (!existsSync(GATEWAY_DIR)) return undefined;
  const { subscriptions } = readJson('subscriptions.json') as {
    subscriptions: { name: string; properties: { scope: string } }[];
  };
  return subscriptions.find((subscription) => subscription.properties.scope === '/apis')?.name;
}

/**
 * The APIM import set: system/gateway/ as it is and the OpenAPI documents its APIs link to, at the same
 * relative places (paths relative to the repository root), for `az apim api import` or the portal.
 */
export function apimImportSet(): Record<string, string> {
  if (!existsSync(GATEWAY_DIR)) return {};
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(GATEWAY_DIR, dir), { withFileTypes: true })) {
      const path = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path);
      else files[`system/gateway/${path}`] = read(path);
    }
  };
  walk('');
  for (const file of list('apis', '.json')) {
    const { value } = readJson(`apis/${file}`).properties;
    const document = join(GATEWAY_DIR, 'apis', value);
    files[relative(repositoryRoot, document)] = readFileSync(document, 'utf8');
  }
  return files;
}
