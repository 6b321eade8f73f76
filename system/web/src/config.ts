/**
 * The app settings the web app reads (environment variables, as App Service gives them). A setting that
 * makes no sense stops the start with a message naming it, never its value.
 */
import { randomBytes } from 'node:crypto';
import { requiredSetting, setting } from '../../functions/src/lib/settings.ts';

export type Variant = 'A' | 'B';

/** The ASP.NET `AzureAd` configuration section, in App Service's `AzureAd__Name` form. */
export interface SignInConfig {
  instance: string;
  tenantId: string;
  domain: string | undefined;
  clientId: string;
  clientSecret: string;
  callbackPath: string;
  graphBaseUrl: string;
}

export interface WebConfig {
  variant: Variant;
  port: number;
  /** Signs the session cookie and the form tokens. */
  sessionSecret: string;
  signIn?: SignInConfig;
}

export function readConfig(): WebConfig {
  const variant = setting('WebAppVariant') ?? 'A';
  if (variant !== 'A' && variant !== 'B')
    throw new Error(
      `the app setting WebAppVariant must be A or B (or absent, meaning A); it is "${variant}"`,
    );
  const port = Number(requiredSetting('PORT'));
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error('the app setting PORT must be a port number');
  if (variant === 'A') {
    // Variant A keeps its tasks in process memory: a secret that dies with the process loses nothing
    // more (a form opened before a restart must be reloaded). Given, it is used.
    return {
      variant,
      port,
      sessionSecret: setting('SessionSecret') ?? randomBytes(32).toString('base64url'),
    };
  }
  const callbackPath = setting('AzureAd__CallbackPath') ?? '/signin-oidc';
  if (!callbackPath.startsWith('/'))
    throw new Error('the app setting AzureAd__CallbackPath must start with /');
  // The tasks' store is reached through the vault: without it no page could work.
  requiredSetting('KeyVaultUri');
  return {
    variant,
    port,
    sessionSecret: requiredSetting('SessionSecret'),
    signIn: {
      instance: requiredSetting('AzureAd__Instance'),
      tenantId: requiredSetting('AzureAd__TenantId'),
      domain: setting('AzureAd__Domain'),
      clientId: requiredSetting('AzureAd__ClientId'),
      clientSecret: requiredSetting('AzureAd__ClientSecret'),
      callbackPath,
      graphBaseUrl: (setting('GraphBaseUrl') ?? 'https://graph.microsoft.com/v1.0').replace(/\/+$/, ''),
    },
  };
}
