/**
 * Reads `system/gateway/` (APIM's resource definitions, policy XML, the OpenAPI documents the APIs
 * import) into one checked configuration. Any problem is an ArtifactError naming the file (and line and
 * policy for XML): the simulator refuses to start on it, and a reload keeps the last good configuration.
 */
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ArtifactError } from './errors.ts';
import { createReader } from './reader.ts';
import * as schemas from './schemas.ts';
import { createScopes, type Pipeline } from './scopes.ts';

export interface Operation {
  /** The operationId (APIM's operation name). */
  name: string;
  displayName: string;
  description: string;
  method: string;
  urlTemplate: string;
  /** Matches the path after the API's suffix; groups are the template parameters. */
  pattern: RegExp;
  /** Examples by status and content type, for mock-response and the developer portal. */
  examples: Record<string, Record<string, unknown>>;
  /** The documented answers (status, text, header names), for the developer portal. */
  responses: { status: string; description: string; headers: string[] }[];
  /** The request body's media types, their schemas (`$ref`s to components resolved) and examples. */
  requestBody?: { required: boolean; content: Record<string, { schema?: unknown; example?: unknown }> };
  /** The effective policy, by the product whose subscription calls ('' for none). */
  pipelines: Map<string, Pipeline>;
}

export interface Api {
  name: string;
  displayName: string;
  path: string;
  serviceUrl: string;
  subscriptionRequired: boolean;
  keyHeader: string;
  keyQuery: string;
  authorizationServer?: string;
  operations: Operation[];
  /** The API scope's effective policy (global → API), for an error before any operation matched. */
  pipeline: Pipeline;
}

export interface SubscriptionDefinition {
  name: string;
  displayName: string;
  scope: string;
  /** The API names the subscription's key opens. */
  apis: Set<string>;
  product?: string;
  state: string;
}

export interface GatewayConfig {
  apis: Api[];
  /** The global scope's policy, for an error before any API matched. */
  pipeline: Pipeline;
  products: { name: string; displayName: string; subscriptionRequired: boolean; apis: string[] }[];
  subscriptions: SubscriptionDefinition[];
  /** Authorization servers with named values resolved (clientSecret included: never log this). */
  authorizationServers: Record<string, Record<string, unknown>>;
  /** Every file read, for the reload watcher. */
  files: string[];
}

export function loadArtifacts(dir: string, namedValues: Record<string, string>): GatewayConfig {
  const reader = createReader(dir, namedValues);
  const { files, show, readJson, resolveNamed, resolveDeep } = reader;
  const scopes = createScopes(reader, dir);
  const policyDir = join(dir, 'policies');
  const global = scopes.layer(join(policyDir, 'global.xml'), 'global');

  // Products.
  const productsFile = join(dir, 'products.json');
  const products = readJson(productsFile, schemas.productsFile).products.map((product) => ({
    name: product.name,
    displayName: product.properties.displayName,
    subscriptionRequired: product.properties.subscriptionRequired,
    apis: product.apis,
    layer: scopes.layer(join(policyDir, 'products', `${product.name}.xml`), `product:${product.name}`),
  }));

  // APIs and their operations (from the OpenAPI document each imports).
  const apiDir = join(dir, 'apis');
  const apis: Api[] = readdirSync(apiDir)
    .sort()
    .map((entry) => {
      const file = join(apiDir, entry);
      const definition = readJson(file, schemas.apiFile);
      const p = definition.properties;
      const apiLayer = scopes.layer(
        join(policyDir, 'apis', `${definition.name}.xml`),
        `api:${definition.name}`,
      );
      const openApiFile = resolve(dirname(file), p.value);
      const document = readJson(openApiFile, schemas.openApiDocument);
      const operations: Operation[] = [];
      for (const [template, methods] of Object.entries(document.paths)) {
        for (const [method, operation] of Object.entries(methods)) {
          if (!operation) continue;
          const name = operation.operationId;
          const opLayer = scopes.layer(
            join(policyDir, 'apis', definition.name, `${name}.xml`),
            `operation:${definition.name}/${name}`,
          );
          const pipelines = new Map<string, Pipeline>();
          const productsOfApi = products.filter((product) => product.apis.includes(definition.name));
          for (const product of [undefined, ...productsOfApi]) {
            pipelines.set(product?.name ?? '', scopes.compose([global, product?.layer, apiLayer, opLayer]));
          }
          const examples: Operation['examples'] = {};
          for (const [status, response] of Object.entries(operation.responses))
            examples[status] = Object.fromEntries(
              Object.entries(response.content ?? {}).map(([type, media]) => [type, media.example]),
            );
          const requestBody = operation.requestBody && {
            required: operation.requestBody.required ?? false,
            content: Object.fromEntries(
              Object.entries(operation.requestBody.content ?? {}).map(([type, { schema, example }]) => [
                type,
                { schema: resolveRef(schema, document.components?.schemas), example },
              ]),
            ),
          };
          operations.push({
            name,
            displayName: operation.summary ?? name,
            description: operation.description ?? '',
            method: method.toUpperCase(),
            urlTemplate: template,
            pattern: templatePattern(template),
            examples,
            responses: Object.entries(operation.responses).map(([status, response]) => ({
              status,
              description: response.description ?? '',
              headers: Object.keys(response.headers ?? {}),
            })),
            requestBody,
            pipelines,
          });
        }
      }
      return {
        name: definition.name,
        displayName: p.displayName,
        path: p.path.replace(/^\/+|\/+$/g, ''),
        serviceUrl: resolveNamed(p.serviceUrl, file),
        subscriptionRequired: p.subscriptionRequired,
        keyHeader: p.subscriptionKeyParameterNames.header,
        keyQuery: p.subscriptionKeyParameterNames.query,
        authorizationServer: p.authenticationSettings?.oAuth2?.authorizationServerId,
        operations,
        pipeline: scopes.compose([global, apiLayer]),
      };
    });
  for (const product of products)
    for (const name of product.apis)
      if (!apis.some((api) => api.name === name))
        throw new ArtifactError(
          show(productsFile),
          undefined,
          undefined,
          `product ${product.name} names unknown API ${name}`,
        );
  for (const api of apis) {
    const open = products.filter((p) => !p.subscriptionRequired && p.apis.includes(api.name));
    if (open.length > 1)
      throw new ArtifactError(
        show(productsFile),
        undefined,
        undefined,
        `API ${api.name} is in more than one open product (${open.map((p) => p.name).join(', ')}); APIM allows at most one`,
      );
  }

  // Anything left under policies/ belongs to no API, operation or product: refused, not ignored.
  const stray = scopes.strays()[0];
  if (stray)
    throw new ArtifactError(
      show(stray),
      undefined,
      undefined,
      'belongs to no scope (global.xml, apis/<api>.xml, apis/<api>/<operationId>.xml, products/<product>.xml)',
    );

  // Authorization servers, with their named values resolved.
  const serverDir = join(dir, 'authorization-servers');
  const authorizationServers: GatewayConfig['authorizationServers'] = {};
  for (const entry of existsSync(serverDir) ? readdirSync(serverDir) : []) {
    const file = join(serverDir, entry);
    const server = readJson(file, schemas.authorizationServerFile);
    authorizationServers[server.name] = resolveDeep(server.properties, file) as Record<string, unknown>;
  }
  for (const api of apis)
    if (api.authorizationServer && !authorizationServers[api.authorizationServer])
      throw new ArtifactError(
        `${show(apiDir)}/${api.name}.json`,
        undefined,
        undefined,
        `no authorization server ${api.authorizationServer}`,
      );

  // Subscriptions and their scopes.
  const subscriptionsFile = join(dir, 'subscriptions.json');
  const subscriptions = readJson(subscriptionsFile, schemas.subscriptionsFile).subscriptions.map(
    ({ name, properties }) => {
      const scope = properties.scope;
      const [, kind, target] = /^\/(apis|products)(?:\/([^/]+))?$/.exec(scope) ?? [];
      const product = kind === 'products' ? products.find((p) => p.name === target) : undefined;
      const apiNames =
        kind === 'apis' && target === undefined
          ? apis.map((api) => api.name)
          : kind === 'apis'
            ? apis.filter((api) => api.name === target).map((api) => api.name)
            : (product?.apis ?? []);
      if (apiNames.length === 0)
        throw new ArtifactError(
          show(subscriptionsFile),
          undefined,
          undefined,
          `subscription ${name}: scope ${scope} names nothing (use /apis, /apis/<api> or /products/<product>)`,
        );
      return {
        name,
        displayName: properties.displayName ?? name,
        scope,
        apis: new Set(apiNames),
        product: product?.name,
        state: properties.state,
      };
    },
  );

  return {
    apis,
    pipeline: scopes.compose([global]),
    products: products.map(({ layer: _, ...rest }) => rest),
    subscriptions,
    authorizationServers,
    files,
  };
}

/** `/api/tasks/{id}` → a case-insensitive pattern with one named group per parameter. */
function templatePattern(template: string): RegExp {
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) =>
      part.startsWith('{')
        ? `(?<${part.slice(1, -1).replace(/\W/g, '_')}>[^/]+)`
        : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'),
    )
    .join('');
  return new RegExp(`^${source}/?$`, 'i');
}

/** A schema that is a `#/components/schemas/<name>` reference, replaced by that schema (one level). */
function resolveRef(schema: unknown, components: Record<string, unknown> = {}) {
  const ref = (schema as { $ref?: unknown } | undefined)?.$ref;
  const prefix = '#/components/schemas/';
  return typeof ref === 'string' && ref.startsWith(prefix) ? components[ref.slice(prefix.length)] : schema;
}
