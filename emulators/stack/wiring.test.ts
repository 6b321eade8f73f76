/** The embedded stack's wiring of the apps: what the launcher tells each app's host beyond its settings. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadApps } from '../core/apps.ts';
import { loadSecrets, type StackSecrets } from '../core/secrets.ts';
import { testDataDir } from '../core/testing.ts';
import { loadTopology } from '../core/topology.ts';
import { stackPorts } from './ports.ts';
import { wire } from './wiring.ts';

const topology = loadTopology();
const apps = loadApps();
const data = testDataDir();
let secrets: StackSecrets;
beforeAll(async () => {
  secrets = await loadSecrets(data.dir, topology);
});
afterAll(() => data.remove());

const functionsPlan = (running?: string[]) => {
  const ports = stackPorts(apps);
  const plan = wire(ports, secrets, data.dir, topology, apps, {}, running).components.find(
    (component) => component.name === 'functions',
  );
  return {
    ports,
    plan,
    options: plan?.options as {
      settings: Record<string, string>;
      keyVaults: Record<string, string>;
      sku?: string;
      siteName?: string;
    },
  };
};

it("tells the function app its site, named as in apps.json (WEBSITE_SITE_NAME), and the template's plan, Consumption (WEBSITE_SKU)", () => {
  expect(functionsPlan().options).toMatchObject({ siteName: 'functions', sku: 'Dynamic' });
});

it("gives a setting named like a vault secret as a Key Vault reference, resolved against the stack's vault", () => {
  const { ports, plan, options } = functionsPlan();
  expect(options.settings.DocumentDbConnection).toBe(
    '@Microsoft.KeyVault(VaultName=taskstack;SecretName=DocumentDbConnection)',
  );
  // The host maps the reference's vault name to the stack's vault, and starts after it.
  expect(options.keyVaults).toEqual({ taskstack: `https://127.0.0.1:${ports.keyvault}/` });
  expect(plan?.startAfter).toEqual(expect.arrayContaining(['keyvault', 'identity']));
});

it('names no vault to a stack run without Key Vault, so a reference is refused at once', () => {
  expect(functionsPlan(['identity', 'blob', 'functions']).options.keyVaults).toEqual({});
});

it("tells Event Grid the identity provider's issuer and keys, so publishers may bring Entra tokens", () => {
  const plan = wire(stackPorts(apps), secrets, data.dir, topology, apps, {}).components;
  const options = (name: string) => plan.find((component) => component.name === name)?.options;
  const { issuer, jwksUri } = options('cosmos') as { issuer: string; jwksUri: string };
  expect(issuer).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]{36}\/v2\.0$/);
  expect(options('eventgrid')).toMatchObject({ issuer, jwksUri });
});
