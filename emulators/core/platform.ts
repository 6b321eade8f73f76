/**
 * What App Service's platform does around an app on Linux, whatever hosts it: the local App Service and
 * functions host, and docker-compose's app containers (system/deploy/compose.ts) all take it from here.
 */
import { createHash } from 'node:crypto';
import { LOOPBACK } from './http.ts';

/**
 * App settings as App Service for Linux puts them in the app's environment: a period in a name becomes
 * an underscore (`Feature.Flag` is `Feature_Flag` to the app).
 */
export const environmentNames = (settings: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(settings).map(([name, value]) => [name.replaceAll('.', '_'), value]));

/**
 * What App Service tells every app of its site, beside its settings: its name, its host (in Azure
 * `<name>.azurewebsites.net`; here the loopback address and port it is reached at), its plan's tier and
 * the instance it runs on (64 hex digits; one instance here, the same across restarts).
 */
export function platformSettings({ port, siteName, sku }: { port: number; siteName: string; sku: string }) {
  return {
    WEBSITE_SITE_NAME: siteName,
    WEBSITE_HOSTNAME: `${LOOPBACK}:${port}`,
    WEBSITE_SKU: sku,
    WEBSITE_INSTANCE_ID: createHash('sha256').update(`${siteName}:${port}`).digest('hex'),
  };
}

/** The path App Service on Linux pings to learn that a started container answers (WEBSITE_WARMUP_PATH). */
export const WARMUP_PATH = '/robots933456.txt';

/**
 * What App Service asks of a started app before it sends it traffic: with a declared health check path,
 * an answer there of 200–299 (no redirect followed); without one, any answer to the warm-up ping (even
 * a 404 or a 500).
 */
export function readinessCheck(healthCheckPath: string | undefined): {
  path: string;
  lowest: number;
  highest: number;
} {
  return healthCheckPath === undefined
    ? { path: WARMUP_PATH, lowest: 100, highest: 599 }
    : { path: healthCheckPath, lowest: 200, highest: 299 };
}

/**
 * The variables through which the Azure SDKs choose whose credential an app uses: @azure/identity's
 * environment, workload-identity and DefaultAzureCredential settings, and the managed-identity sources
 * MSAL detects. An app on App Service has them only as its app settings. From a developer's shell,
 * signed in to their own tenant, they made the apps here ask that tenant (EnvironmentCredential) instead
 * of the stack's managed identity.
 */
const SHELL_CREDENTIAL_VARIABLES = [
  'AZURE_TENANT_ID',
  'AZURE_CLIENT_ID',
  'AZURE_CLIENT_SECRET',
  'AZURE_CLIENT_CERTIFICATE_PATH',
  'AZURE_CLIENT_CERTIFICATE_PASSWORD',
  'AZURE_CLIENT_SEND_CERTIFICATE_CHAIN',
  'AZURE_USERNAME',
  'AZURE_PASSWORD',
  'AZURE_FEDERATED_TOKEN_FILE',
  'AZURE_AUTHORITY_HOST',
  'AZURE_ADDITIONALLY_ALLOWED_TENANTS',
  'AZURE_IDENTITY_DISABLE_MULTITENANTAUTH',
  'AZURE_REGIONAL_AUTHORITY_NAME',
  'AZURE_POD_IDENTITY_AUTHORITY_HOST',
  'AZURE_TOKEN_CREDENTIALS',
  'IDENTITY_ENDPOINT',
  'IDENTITY_HEADER',
  'IDENTITY_SERVER_THUMBPRINT',
  'IMDS_ENDPOINT',
  'MSI_ENDPOINT',
  'MSI_SECRET',
];

/** `env` without the shell's credential variables, and the names of those it had (never their values). */
export function withoutShellCredentials(env: NodeJS.ProcessEnv): {
  env: NodeJS.ProcessEnv;
  removed: string[];
} {
  const removed = SHELL_CREDENTIAL_VARIABLES.filter((name) => env[name] !== undefined);
  const kept = { ...env };
  for (const name of removed) delete kept[name];
  return { env: kept, removed };
}
