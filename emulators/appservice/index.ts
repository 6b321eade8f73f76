/**
 * App Service for a Node web app, as Azure runs one on Linux: the app settings become environment
 * variables, `PORT` says where to listen, and the file App Service would start is run (startup.ts). Here the app runs in
 * this component's own process (one process per app, as in App Service), so stopping the component
 * ends the app, as App Service ends its process.
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { importModule } from '../core/bundle.mjs';
import { defineEmulator } from '../core/emulator.ts';
import { accepts, LOOPBACK, probe } from '../core/http.ts';
import { resolveKeyVaultReferences } from '../core/keyvault-references.ts';
import { resolveStartFile, startFile } from './startup.ts';

/** How long an app may take from being loaded to listening on PORT (App Service waits 230 s). */
const START_TIMEOUT_MS = 30_000;
/** The path App Service on Linux pings to learn that a started container answers (WEBSITE_WARMUP_PATH). */
const WARMUP_PATH = '/robots933456.txt';

/**
 * App settings as App Service for Linux puts them in the app's environment: a period in a name becomes
 * an underscore (`Feature.Flag` is `Feature_Flag` to the app).
 */
const environmentNames = (settings: Record<string, string>) =>
  Object.fromEntries(Object.entries(settings).map(([name, value]) => [name.replaceAll('.', '_'), value]));

/**
 * What App Service tells every app of its site, beside its settings: its name, its host (in Azure
 * `<name>.azurewebsites.net`; here the loopback address it listens on), its plan's tier and the
 * instance it runs on (64 hex digits; one instance here, the same across restarts).
 */
function platformSettings({ port, siteName, sku }: { port: number; siteName: string; sku: string }) {
  return {
    WEBSITE_SITE_NAME: siteName,
    WEBSITE_HOSTNAME: `${LOOPBACK}:${port}`,
    WEBSITE_SKU: sku,
    WEBSITE_INSTANCE_ID: createHash('sha256').update(`${siteName}:${port}`).digest('hex'),
  };
}

export default defineEmulator({
  name: 'appservice',
  options: z.object({
    port: z.number().int().min(1).max(65535),
    appDir: z.string().min(1),
    settings: z.record(z.string(), z.string()).default({}),
    /** App Service's health check path, if the app declares one (Azure pings it only then). */
    healthCheckPath: z.string().startsWith('/').optional(),
    /** The app's name (WEBSITE_SITE_NAME) and its plan's tier (WEBSITE_SKU), which App Service tells it. */
    siteName: z.string().min(1),
    sku: z.string().min(1),
    /** The stack's vaults by name, for the settings' Key Vault references (`VaultName=<name>`). */
    keyVaults: z.record(z.string(), z.string().url()).default({}),
  }),
  async start(options, context) {
    const appDir = resolve(options.appDir);
    const entry = resolveStartFile(appDir, startFile(appDir));
    // App Service binds the app to loopback behind its front end; PORT is the one contract.
    // As App Service does before the app starts: Key Vault references become their secrets' values.
    const settings = await resolveKeyVaultReferences(options.settings, {
      vaults: options.keyVaults,
      warn: (message) => context.log(`warning: ${message}`),
    });
    Object.assign(process.env, environmentNames(settings), platformSettings(options), {
      PORT: String(options.port),
      HOST: LOOPBACK,
    });
    process.chdir(appDir);
    await importModule(pathToFileURL(entry).href);

    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await accepts(options.port))) {
      if (Date.now() > deadline)
        throw new Error(`the app did not listen on PORT ${options.port} within ${START_TIMEOUT_MS / 1000} s`);
      await new Promise((done) => setTimeout(done, 25));
    }
    const baseUrl = `http://${LOOPBACK}:${options.port}`;
    context.log(`app ${appDir} listening on ${baseUrl}`);
    return {
      endpoints: { baseUrl },
      async health() {
        const path = options.healthCheckPath;
        // Without a health check, App Service's warm-up ping takes any answer as ready (even a 404 or
        // a 500); a declared health check counts only 200–299, and follows no redirect.
        const status = await probe(`${baseUrl}${path ?? WARMUP_PATH}`);
        if (path !== undefined && (status < 200 || status > 299))
          throw new Error(
            `the health check path ${path} answered ${status} (App Service counts only 200–299 as healthy)`,
          );
      },
      // The process ends right after: that is how App Service stops an app.
      stop: async () => {},
    };
  },
});
