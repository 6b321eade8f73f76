/**
 * App Service for a Node web app, as Azure runs one on Linux: the app settings become environment
 * variables, `PORT` says where to listen, and the file App Service would start is run (startup.ts). Here the app runs in
 * this component's own process (one process per app, as in App Service), so stopping the component
 * ends the app, as App Service ends its process.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { importModule } from '../core/bundle.mjs';
import { defineEmulator } from '../core/emulator.ts';
import { accepts, LOOPBACK, probe } from '../core/http.ts';
import { resolveKeyVaultReferences } from '../core/keyvault-references.ts';
import { environmentNames, platformSettings, readinessCheck } from '../core/platform.ts';
import { resolveStartFile, startFile } from './startup.ts';

/** How long an app may take from being loaded to listening on PORT (App Service waits 230 s). */
const START_TIMEOUT_MS = 30_000;

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
        // probe() follows no redirect, as App Service's checks do.
        const { path, lowest, highest } = readinessCheck(options.healthCheckPath);
        const status = await probe(`${baseUrl}${path}`);
        if (status < lowest || status > highest)
          throw new Error(
            `the health check path ${path} answered ${status} (App Service counts only ${lowest}–${highest} as healthy)`,
          );
      },
      // The process ends right after: that is how App Service stops an app.
      stop: async () => {},
    };
  },
});
