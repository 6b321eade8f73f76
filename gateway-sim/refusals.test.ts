import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorContext } from '../emulators/core/emulator.ts';
import { testContext, testDataDir } from '../emulators/core/testing.ts';
import { editArtifact, startBackend, startGateway } from './testing.ts';

const FUNCTIONS_POLICY = 'policies/apis/task-manager-functions-api.xml';
const WEB_POLICY = 'policies/apis/task-manager-web-api.xml';

// One backend and one context (keys, certificates) for every refused start: each start still reads its
// own edited copy of the artifacts, and a refused gateway leaves nothing behind in them.
const data = testDataDir();
let backend: Awaited<ReturnType<typeof startBackend>>;
let context: EmulatorContext;
beforeAll(async () => {
  [backend, context] = await Promise.all([startBackend(), testContext(data.dir, { inMemory: true })]);
});
afterAll(async () => {
  await backend?.close();
  data.remove();
});

/** Starting on artifacts edited by `prepare` must fail with exactly `message`. */
async function refused(
  prepare: (dir: string) => void,
  message: string,
  namedValues?: Record<string, string | undefined>,
) {
  await expect(
    startGateway({ functionApp: backend.url, webApp: backend.url, prepare, namedValues, context }),
  ).rejects.toThrow(message);
}

describe('gateway: anything malformed or unsupported refuses the start, naming file, line and policy', () => {
  it('malformed XML', () =>
    refused(
      (dir) =>
        editArtifact(dir, WEB_POLICY, (text) =>
          text.replace('template="/api/tasks" />', 'template="/api/tasks">'),
        ),
      'system/gateway/policies/apis/task-manager-web-api.xml line 6: expected </rewrite-uri> to close the element of line 5',
    ));

  it('an unsupported policy', () =>
    refused(
      (dir) =>
        editArtifact(dir, WEB_POLICY, (text) => text.replace('<rewrite-uri', '<choose /><rewrite-uri')),
      'system/gateway/policies/apis/task-manager-web-api.xml line 5, <choose>: this policy is not supported by the simulator',
    ));

  it('an invalid attribute value, and an unknown attribute', async () => {
    await refused(
      (dir) => editArtifact(dir, FUNCTIONS_POLICY, (text) => text.replace('calls="5"', 'calls="five"')),
      'system/gateway/policies/apis/task-manager-functions-api.xml line 5, <rate-limit>: calls must be a positive whole number',
    );
    await refused(
      (dir) =>
        editArtifact(dir, FUNCTIONS_POLICY, (text) => text.replace('calls="5"', 'calls="5" counter="x"')),
      'system/gateway/policies/apis/task-manager-functions-api.xml line 5, <rate-limit>: attribute counter is not supported',
    );
    // APIM's sliding windows are at most 300 s long.
    await refused(
      (dir) =>
        editArtifact(dir, FUNCTIONS_POLICY, (text) =>
          text.replace('renewal-period="60"', 'renewal-period="301"'),
        ),
      'system/gateway/policies/apis/task-manager-functions-api.xml line 5, <rate-limit>: renewal-period must be at most 300 (seconds)',
    );
  });

  it("quota-by-key: a period under 300 s (its reference's minimum), a first-period-start that is no yyyy-MM-ddTHH:mm:ssZ date, a bandwidth or increment-count that is no positive whole number, an increment-condition outside the expression subset", async () => {
    const quotaByKey = (attributes: string) => (dir: string) =>
      editArtifact(dir, FUNCTIONS_POLICY, (text) =>
        text.replace(
          '<rate-limit calls="5" renewal-period="60" />',
          `<quota-by-key calls="5" counter-key="k" ${attributes} />`,
        ),
      );
    const at = 'system/gateway/policies/apis/task-manager-functions-api.xml line 5, <quota-by-key>: ';
    await refused(
      quotaByKey('renewal-period="60"'),
      `${at}renewal-period must be 0 or at least 300 (seconds)`,
    );
    for (const start of ['2024-02-30T00:00:00Z', '2024-01-01', '@(context.Request.Method)'])
      await refused(
        quotaByKey(`renewal-period="300" first-period-start="${start}"`),
        `${at}first-period-start must be a date and time as yyyy-MM-ddTHH:mm:ssZ, not ${JSON.stringify(start)}`,
      );
    await refused(
      quotaByKey('renewal-period="300" bandwidth="1.5"'),
      `${at}bandwidth must be a positive whole number`,
    );
    await refused(
      quotaByKey('renewal-period="300" increment-count="0"'),
      `${at}increment-count must be a positive whole number`,
    );
    await refused(
      quotaByKey(
        'renewal-period="300" increment-condition="@(context.Response.StatusCode == &quot;200&quot;)"',
      ),
      `${at}expression: Operator '==' cannot be applied to operands of type 'int' and 'string'`,
    );
  });

  it('rate-limit-by-key: an increment-count that is no positive whole number, an increment-condition outside the expression subset', async () => {
    const rateLimitByKey = (attributes: string) => (dir: string) =>
      editArtifact(dir, FUNCTIONS_POLICY, (text) =>
        text.replace(
          '<rate-limit calls="5" renewal-period="60" />',
          `<rate-limit-by-key calls="5" renewal-period="60" counter-key="k" ${attributes} />`,
        ),
      );
    const at = 'system/gateway/policies/apis/task-manager-functions-api.xml line 5, <rate-limit-by-key>: ';
    for (const count of ['0', '1.5'])
      await refused(
        rateLimitByKey(`increment-count="${count}"`),
        `${at}increment-count must be a positive whole number`,
      );
    await refused(
      rateLimitByKey('increment-condition="@(context.Request.Body.As&lt;string&gt;())"'),
      `${at}expression: unknown member Body`,
    );
  });

  it('a policy in a section that does not take it', () =>
    refused(
      (dir) =>
        editArtifact(dir, FUNCTIONS_POLICY, (text) =>
          text.replace(
            '<outbound>\n    <base />',
            '<outbound>\n    <base /><rate-limit calls="1" renewal-period="1" />',
          ),
        ),
      'system/gateway/policies/apis/task-manager-functions-api.xml line 11, <rate-limit>: not allowed in <outbound>',
    ));

  it("a policy at a scope that does not take it (APIM's policy reference: rate-limit not global, quota product only)", async () => {
    await refused(
      (dir) =>
        editArtifact(dir, 'policies/global.xml', (text) =>
          text.replace('<inbound />', '<inbound><rate-limit calls="1" renewal-period="1" /></inbound>'),
        ),
      'system/gateway/policies/global.xml line 3, <rate-limit>: not allowed at global scope (APIM takes it at product, API or operation scope)',
    );
    await refused(
      (dir) =>
        editArtifact(dir, FUNCTIONS_POLICY, (text) =>
          text.replace(
            '<rate-limit calls="5" renewal-period="60" />',
            '<quota calls="5" renewal-period="60" />',
          ),
        ),
      'system/gateway/policies/apis/task-manager-functions-api.xml line 5, <quota>: not allowed at API scope (APIM takes it at product scope)',
    );
  });

  it("an API in two open products (APIM's subscriptions article: at most one open product per API)", () =>
    refused(
      (dir) =>
        editArtifact(dir, 'products.json', (text) => {
          const file = JSON.parse(text);
          const open = {
            ...file.products[0],
            properties: { ...file.products[0].properties, subscriptionRequired: false },
          };
          file.products = [open, { ...open, name: 'also-open' }];
          return JSON.stringify(file);
        }),
      'system/gateway/products.json: API task-manager-functions-api is in more than one open product (task-manager, also-open); APIM allows at most one',
    ));

  it("rate-limit or quota twice in one policy definition (APIM's policy reference: used only once per policy definition)", async () => {
    await refused(
      (dir) =>
        editArtifact(dir, FUNCTIONS_POLICY, (text) =>
          text.replace(
            '<rate-limit calls="5" renewal-period="60" />',
            '<rate-limit calls="5" renewal-period="60" />\n    <rate-limit calls="50" renewal-period="300" />',
          ),
        ),
      'system/gateway/policies/apis/task-manager-functions-api.xml line 6, <rate-limit>: used only once per policy definition (APIM)',
    );
    await refused((dir) => {
      mkdirSync(join(dir, 'policies', 'products'));
      writeFileSync(
        join(dir, 'policies', 'products', 'task-manager.xml'),
        '<policies>\n<inbound>\n<quota calls="5" renewal-period="60" />\n<quota calls="9" renewal-period="90" />\n</inbound>\n</policies>\n',
      );
    }, 'system/gateway/policies/products/task-manager.xml line 4, <quota>: used only once per policy definition (APIM)');
  });

  it('quota without calls or bandwidth (its reference: either, or both, must be given), or a bandwidth that is no positive whole number', async () => {
    const quota = (attributes: string) => (dir: string) => {
      mkdirSync(join(dir, 'policies', 'products'));
      writeFileSync(
        join(dir, 'policies', 'products', 'task-manager.xml'),
        `<policies>\n<inbound>\n<quota ${attributes} />\n</inbound>\n</policies>\n`,
      );
    };
    const at = 'system/gateway/policies/products/task-manager.xml line 3, <quota>: ';
    await refused(quota('renewal-period="60"'), `${at}attribute calls or bandwidth is required`);
    await refused(
      quota('bandwidth="1.5" renewal-period="60"'),
      `${at}bandwidth must be a positive whole number`,
    );
  });

  it('an expression outside the safe subset', async () => {
    const withValue = (value: string) => (dir: string) =>
      editArtifact(dir, WEB_POLICY, (text) =>
        text.replace(
          '<rewrite-uri',
          `<set-header name="x" exists-action="override">\n<value>${value}</value></set-header><rewrite-uri`,
        ),
      );
    await refused(
      withValue('@(context.Request.Body.As<string>())'),
      'system/gateway/policies/apis/task-manager-web-api.xml line 5, <set-header>: expression: unknown member Body',
    );
    await refused(
      withValue('@(System.IO.File.ReadAllText("/etc/passwd"))'),
      'system/gateway/policies/apis/task-manager-web-api.xml line 5, <set-header>: expression: "System" is not supported (only context.… is)',
    );
  });

  it('a named value that is not declared, or has no value', async () => {
    await refused(
      (dir) => editArtifact(dir, WEB_POLICY, (text) => text.replace('/api/tasks', '{{Nowhere}}/api/tasks')),
      'system/gateway/policies/apis/task-manager-web-api.xml line 5, <rewrite-uri>: named value Nowhere is not declared in named-values.json',
    );
    await refused(
      () => {},
      "system/gateway/policies/apis/task-manager-functions-api/ManageTask.xml line 6, <value>: named value FunctionKey has no value (give it in the gateway's namedValues option)",
      { FunctionKey: undefined },
    );
  });

  it('a secret named value with a literal value in the repository', () =>
    refused(
      (dir) =>
        editArtifact(dir, 'named-values.json', (text) =>
          text.replace('"secret": true }', '"secret": true, "value": "abc" }'),
        ),
      'system/gateway/named-values.json: secret named value FunctionKey must not carry a literal value',
    ));

  it('a policy file that belongs to no scope, and <base /> at global scope', async () => {
    await refused(
      (dir) => writeFileSync(join(dir, 'policies/apis/task-manager-api.xml'), '<policies />'),
      'system/gateway/policies/apis/task-manager-api.xml: belongs to no scope (global.xml, apis/<api>.xml, apis/<api>/<operationId>.xml, products/<product>.xml)',
    );
    await refused(
      (dir) =>
        editArtifact(dir, 'policies/global.xml', (text) =>
          text.replace('<inbound />', '<inbound><base /></inbound>'),
        ),
      'system/gateway/policies/global.xml line 3, <base>: the global scope has nothing to inherit',
    );
  });

  it('a resource definition or OpenAPI document that does not fit its shape', async () => {
    await refused(
      (dir) =>
        editArtifact(dir, 'subscriptions.json', (text) =>
          text.replace('"scope": "/apis"', '"scope": "/everything"'),
        ),
      'system/gateway/subscriptions.json: subscriptions.0.properties.scope: must be /apis, /apis/<api> or /products/<product>',
    );
    await refused(
      (dir) =>
        editArtifact(dir, 'apis/task-manager-web-api.json', (text) =>
          text.replace('"openapi+json-link"', '"swagger-json"'),
        ),
      'system/gateway/apis/task-manager-web-api.json: properties.format: must be openapi+json-link (value: the OpenAPI document, relative to this file)',
    );
    await refused(
      (dir) =>
        editArtifact(dir, '../../openapi/gateway-web.json', (text) =>
          text.replace('"operationId": "get-tasks",', ''),
        ),
      'openapi/gateway-web.json: paths./api/tasks.get.operationId: Invalid input: expected string, received undefined',
    );
  });
});
