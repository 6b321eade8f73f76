import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Topology } from './topology.ts';

/**
 * Schema of `system/apps.json`: each app of the system declared once. The launcher runs them, and the
 * compose file and Azure template are derived from the same declaration, so adding an app touches none
 * of them.
 */
const appSchema = z.object({
  /** What hosts it: the Azure Functions runtime, or App Service running a Node web app. */
  kind: z.enum(['functionapp', 'webapp']),
  /** Its folder, relative to the repository root: deployable as is. */
  folder: z.string().min(1),
  /** A module of the folder whose default export builds the app (as `npm run build` does), if any. */
  build: z.string().optional(),
  /** The port it listens on locally with `--port-base`-less defaults. */
  localPort: z.number().int().min(1).max(65535),
  /**
   * App Service's health check path in Azure, set only when declared: Azure counts only 200–299 as
   * healthy and follows no redirect, so a path that answers anonymous callers otherwise takes the
   * instances out. Locally and in compose a web app is ready once it answers 200–299 in the same way
   * (without one, any answer to App Service's warm-up ping: `readinessCheck`, core/platform.ts); a
   * function app in compose once it, or `/`, answers below 500.
   */
  healthCheckPath: z.string().startsWith('/').optional(),
  /** App settings by the spec's names: literal values, or `@service.value` references. */
  settings: z.record(z.string(), z.string()),
});
export type AppDeclaration = z.infer<typeof appSchema>;

/**
 * The App Service plan each kind runs on in Azure (the template's), whose tier App Service gives the app
 * as WEBSITE_SKU: the Functions runtime bounds functionTimeout by it.
 */
export const hostingPlan = {
  functionapp: { name: 'Y1', tier: 'Dynamic' },
  webapp: { name: 'B1', tier: 'Basic' },
} as const satisfies Record<AppDeclaration['kind'], { name: string; tier: string }>;

const appName = z.string().regex(/^[a-z][a-z0-9-]*$/, 'app names are lower case letters, digits and -');
export const appsSchema = z.object({ apps: z.record(appName, appSchema) });
export type Apps = z.infer<typeof appsSchema>['apps'];

export { repositoryRoot } from './files.ts';
export const appsPath = fileURLToPath(new URL('../../system/apps.json', import.meta.url));

/** What App Service takes as an app setting's name (on Linux a period then becomes an underscore). */
const SETTING_NAME = /^[A-Za-z0-9._]+$/;

export function loadApps(path = appsPath): Apps {
  const { apps } = appsSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
  for (const [app, { settings }] of Object.entries(apps))
    for (const name of Object.keys(settings).filter((name) => !SETTING_NAME.test(name)))
      throw new Error(
        `${path}: app ${app}: setting name ${JSON.stringify(name)} is not one App Service takes: letters, digits, periods and underscores only (a configuration section's AzureAd:Instance is AzureAd__Instance)`,
      );
  return apps;
}

/** A `@service.value` reference: the service it names and the full key, or undefined for a literal. */
export function settingReference(value: string): { service: string; key: string } | undefined {
  const match = /^@(([a-z]+)\.[\w.-]+)$/.exec(value);
  return match ? { key: match[1] as string, service: match[2] as string } : undefined;
}

/**
 * The name by which apps.json's Key Vault references (`VaultName=taskstack`,
 * `https://taskstack.vault.azure.net/…`) mean the system's own vault: the stack's locally, the
 * deployment's in Azure (the launcher and the template map it).
 */
export const LOCAL_VAULT_NAME = 'taskstack';

/**
 * The one rule deciding which app settings are Key Vault references, in Azure and locally alike: a setting
 * named like a vault secret of the topology is a reference to that secret (whatever apps.json gives as its
 * value, e.g. `@cosmos.connectionString`, is what the secret is made of). Gives the secret's name, or
 * undefined for a setting that is not a reference.
 */
export function vaultSecretOf(topology: Topology, settingName: string): string | undefined {
  return topology.keyVault.secrets.includes(settingName) ? settingName : undefined;
}

/** The managed identity (topology name) an app runs as, if it has one. */
export function appIdentity(topology: Topology, app: string): string | undefined {
  return Object.entries(topology.identities).find(([, identity]) => identity.app === app)?.[0];
}

/**
 * An app's settings with every reference replaced by its value. A reference to something the stack
 * does not have fails, naming the app and the setting (never the value: it may be a key).
 */
export function resolveSettings(
  app: string,
  settings: Record<string, string>,
  values: Record<string, string>,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(settings).map(([name, value]) => {
      const reference = settingReference(value);
      if (!reference) return [name, value];
      const resolved = values[reference.key];
      if (resolved === undefined)
        throw new Error(`app ${app}: setting ${name} names ${value}, which the stack does not provide`);
      return [name, resolved];
    }),
  );
}
