/**
 * The local Azure Functions runtime for Node.js v4 apps: loads the app in this process as the worker
 * does, serves its HTTP functions with the host's routing and keys, runs its other triggers and writes
 * its output bindings.
 */
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { defineEmulator } from '../core/emulator.ts';
import { gracefulClose, listen } from '../core/http.ts';
import { InvalidInputError, NotFoundError } from '../core/ipc.ts';
import { isKeyVaultReference, resolveKeyVaultReferences } from '../core/keyvault-references.ts';
import { platformSettings } from '../core/platform.ts';
import { inputReader } from './bindings/inputs.ts';
import { outputWriter, unsupportedBindings } from './bindings/outputs.ts';
import { loadHostConfig, resolveAppSettings } from './config.ts';
import { blobService, connectionSetting } from './connections.ts';
import { AppRegistry, installCoreApi, type LogLevel } from './core-api.ts';
import {
  defaultHostId,
  functionErrors,
  type Host,
  indexingErrors,
  isDisabled,
  type Listener,
  triggerOf,
} from './host.ts';
import { createHostServer } from './http/server.ts';
import { Invoker, TIMEOUT_GRACE_MS } from './invoke.ts';
import { KeyManager, type KeyType } from './keys.ts';
import { BlobSecretsStore, FileSecretsStore } from './keys-store.ts';
import { startListener } from './listeners.ts';
import { loadApp, runAppStart, runAppTerminate } from './loader.ts';
import { FunctionLogs } from './logs.ts';
import { RETRY_TRIGGERS, retryPolicy } from './retry.ts';
import { triggerKinds } from './triggers/kinds.ts';

/**
 * How long a stopping host lets HTTP requests under way finish: ASP.NET Core's default shutdown timeout,
 * after which the runtime ends them (azure-functions-host#4765).
 */
const SHUTDOWN_GRACE_MS = 5_000;

const keyTarget = z.object({
  function: z.string().min(1).optional(),
  keyType: z.enum(['functionKeys', 'systemKeys', 'masterKey']).optional(),
  keyName: z.string().regex(/^[\w.-]{1,128}$/, 'key names are letters, digits, _ . -'),
});

/**
 * The app, imported with its settings in process.env as the worker imports it. It needs the options
 * alone, so a prepared process does this while the services the app uses start (Emulator.load); what
 * the app's registrations log meanwhile is kept until the host's log exists.
 */
async function loadFunctionApp(options: {
  appDir: string;
  settings: Record<string, string>;
  keyVaults: Record<string, string>;
  port: number;
  siteName?: string;
  sku?: string;
}) {
  const began = performance.now();
  const appDir = resolve(options.appDir);
  const early: [LogLevel, string][] = [];
  let systemLog = (level: LogLevel, message: string) => {
    early.push([level, message]);
  };
  // As the platform does before the app starts: the app settings' Key Vault references become their
  // secrets' values, read with the app's identity (the Functions host's `func start` does not; Azure
  // does, and these are the app's Azure settings). Waits for the vault if it is still starting.
  const references = Object.values(options.settings).filter(isKeyVaultReference).length;
  const settings = await resolveKeyVaultReferences(options.settings, {
    vaults: options.keyVaults,
    warn: (message) => systemLog('warning', message),
  });
  if (references > 0)
    systemLog(
      'information',
      `Key Vault references: ${references} app setting(s) read in ${Math.round(performance.now() - began)}ms`,
    );
  // The app reads its settings from process.env, as in Azure; it runs in this very process. App Service
  // adds what it tells every app of its site (or, with no site, as `func start`, its plan's tier alone).
  Object.assign(
    process.env,
    resolveAppSettings(appDir, settings, process.env, (message) => systemLog('warning', message)),
  );
  const { port, siteName, sku } = options;
  if (siteName && sku) Object.assign(process.env, platformSettings({ port, siteName, sku }));
  else if (sku) process.env.WEBSITE_SKU = sku;
  const registry = new AppRegistry((level, message) => systemLog(level, message));
  installCoreApi(registry);
  const files = await loadApp(appDir);
  return {
    appDir,
    registry,
    files,
    loadMs: performance.now() - began,
    logTo(logs: FunctionLogs) {
      systemLog = (level, message) => logs.host(level, message);
      for (const [level, message] of early) logs.host(level, message);
    },
  };
}

export default defineEmulator({
  name: 'functions',
  options: z
    .object({
      port: z.number().int().min(0).max(65535),
      appDir: z.string().min(1),
      settings: z.record(z.string(), z.string()).default({}),
      logFile: z.string().optional(),
      /** The tier of the app's App Service plan (`Dynamic`: Consumption), given to it as WEBSITE_SKU. */
      sku: z.string().min(1).optional(),
      /** The app's name in App Service (WEBSITE_SITE_NAME); without it the host runs as `func start`. */
      siteName: z.string().min(1).optional(),
      /** Blob endpoints (as connection strings give them) → their blob events stream (blob/blob-events.cjs). */
      blobEvents: z.record(z.string(), z.string()).default({}),
      /** The stack's vaults by name, for the settings' Key Vault references (`VaultName=<name>`). */
      keyVaults: z.record(z.string(), z.string().url()).default({}),
    })
    // The app is told its site's host as it is imported, before the host listens.
    .refine((options) => !options.siteName || (options.port > 0 && options.sku), {
      message: 'a site (siteName) needs its port and its plan (sku): App Service tells the app both',
    }),
  load: loadFunctionApp,
  async start(options, context, loaded) {
    const began = performance.now();
    const { appDir, registry, files } = loaded;
    const settings = process.env;
    const config = loadHostConfig(appDir, settings);
    const logs = new FunctionLogs({
      clock: context.clock,
      print: context.log,
      logFile: options.logFile,
      levels: config.logLevels,
    });
    loaded.logTo(logs);
    logs.host('information', `Loaded ${files.length} entry point file(s) in ${Math.round(loaded.loadMs)}ms`);
    await runAppStart(appDir, registry);
    registry.lock();
    // As the runtime: a function in error is logged and left out; the others run.
    const kinds = triggerKinds();
    for (const [name, message] of functionErrors(registry.functions.values())) {
      logs.host('error', `The '${name}' function is in error: ${message}`);
      registry.functions.delete(name.toLowerCase());
    }
    for (const [name, message] of indexingErrors(registry.functions.values(), kinds, settings)) {
      logs.host('warning', `Function 'Functions.${name}' failed indexing and will be disabled.`);
      logs.host('error', `The '${name}' function is in error: ${message}`);
      registry.functions.delete(name.toLowerCase());
    }
    // As the worker does once the app is loaded: this also locks app.setup() and starts its HTTP proxy.
    const capabilities = (await registry.programmingModel?.getCapabilities?.({})) ?? {};

    const hostId = defaultHostId(appDir, settings);
    logs.host('information', `Starting Host (HostId=${hostId}, Version=${registry.api.hostVersion})`);
    const useBlob =
      settings.AzureWebJobsSecretStorageType?.toLowerCase() !== 'files' &&
      connectionSetting(settings, undefined);
    const store = useBlob
      ? new BlobSecretsStore(blobService(settings, undefined), hostId)
      : new FileSecretsStore(context.stateDir && join(context.stateDir, 'secrets'));
    const keys = new KeyManager(store, context.secrets, hostId, () => context.changed?.('keys'));
    await keys.host();

    // Aborted as the host stops: the Event Grid output retries no more (Azure's host cancels an
    // invocation's token as it shuts down) instead of holding the stop for seconds.
    const stopping = new AbortController();
    // Past a function's timeout and grace, Azure's host restarts the worker running it. The worker is
    // this process, so it ends and is started again: as a crash when the function still lets the event
    // loop turn, by the watchdog when it does not (an endless loop).
    const outputs = outputWriter(settings, context.clock, stopping.signal, config.eventHubs.clientRetry);
    const invoker = new Invoker(
      registry,
      logs,
      config.functionTimeoutMs,
      outputs,
      inputReader(settings, context.clock),
      (_fn, invocationId) => {
        logs.host(
          'warning',
          `A function timeout has occurred. Restarting worker process executing invocationId '${invocationId}'.`,
        );
        context.crash(
          `a function ran past functionTimeout (invocation ${invocationId}): restarting the worker`,
        );
      },
    );
    // Only a function holds the loop that long: an idle host has nothing that could.
    if (config.functionTimeoutMs !== undefined) context.watch?.(config.functionTimeoutMs + TIMEOUT_GRACE_MS);
    const host: Host = {
      appDir,
      hostId,
      baseUrl: '',
      config,
      settings,
      registry,
      invoker,
      keys,
      logs,
      clock: context.clock,
      httpStreamUri: capabilities.HttpUri,
      blobEvents: options.blobEvents,
    };
    const server = createHostServer(host, kinds);
    const closeServer = gracefulClose(server);
    const port = await listen(server, options.port);
    host.baseUrl = `http://127.0.0.1:${port}`;
    // Without a site (the port may be chosen only now), as `func start` tells it once it listens.
    if (!options.siteName) settings.WEBSITE_HOSTNAME = `127.0.0.1:${port}`;

    // The runtime starts its functions' listeners in parallel (WebJobs' CompositeListener).
    const starting: Promise<Listener>[] = [];
    const lines: string[] = [];
    for (const fn of registry.functions.values()) {
      const trigger = triggerOf(fn);
      const type = trigger.type.toLowerCase();
      const unsupported = unsupportedBindings(fn);
      if (unsupported.length) {
        logs.host(
          'warning',
          `Function 'Functions.${fn.name}': bindings not served by this host: ${unsupported.join(', ')}`,
        );
      }
      // WebJobs' FunctionIndexer.CheckRetrySupport words; unlike the runtime, this host does not retry them.
      if (retryPolicy(fn, host) && !RETRY_TRIGGERS.has(type)) {
        logs.host(
          'warning',
          `Soon retries will not be supported for function 'Functions.${fn.name}'. For more information, please visit http://aka.ms/func-retry-policies.`,
        );
      }
      if (isDisabled(settings, fn)) {
        lines.push(`${fn.name}: ${trigger.type} (disabled)`);
        continue;
      }
      if (type === 'httptrigger') {
        const methods = Array.isArray(trigger.methods) ? `[${trigger.methods.join(',')}] ` : '';
        lines.push(
          `${fn.name}: ${methods}${host.baseUrl}/${[config.routePrefix, trigger.route ?? fn.name].filter(Boolean).join('/')}`,
        );
        continue;
      }
      lines.push(`${fn.name}: ${trigger.type}`);
      const kind = kinds.get(type);
      if (!kind?.listen) {
        logs.host(
          'warning',
          `Function 'Functions.${fn.name}': trigger type '${trigger.type}' is not run by this host.`,
        );
        continue;
      }
      const listen = kind.listen;
      starting.push(
        startListener(
          `Functions.${fn.name}`,
          () => listen(host, fn, trigger),
          (level, message) => logs.host(level, message),
        ),
      );
    }
    const listeners = await Promise.all(starting);
    logs.host('information', `Functions:\n\n${lines.map((line) => `\t${line}`).join('\n\n')}\n`);
    logs.host('information', `Host started (${Math.round(performance.now() - began)}ms)`);

    const listKeys = z.object({ function: z.string().min(1).optional() });
    const known = (name: string | undefined) => {
      if (name !== undefined && !registry.find(name)) throw new NotFoundError(`no function named ${name}`);
      return name && registry.find(name)?.name;
    };
    const setKey = async (input: unknown, renew: boolean) => {
      const target = keyTarget.extend({ keyValue: z.string().min(1).optional() }).parse(input ?? {});
      if (target.function && target.keyType)
        throw new InvalidInputError('keyType applies to host keys only (omit function)');
      return keys.set({
        fn: known(target.function),
        keyType: target.keyType as KeyType | undefined,
        name: target.keyName,
        value: renew ? undefined : target.keyValue,
      });
    };

    return {
      endpoints: { baseUrl: host.baseUrl },
      async health() {
        if (!server.listening) throw new Error('the functions host is not listening');
      },
      async stop() {
        stopping.abort();
        // As the runtime's web host (ASP.NET Core) stops: HTTP requests under way get its 5 s to finish.
        await Promise.all([
          Promise.allSettled(listeners.map((listener) => listener.stop())),
          closeServer(SHUTDOWN_GRACE_MS),
        ]);
        await outputs.close();
        await runAppTerminate(registry).catch((error: Error) =>
          logs.host('error', `appTerminate hook failed: ${error.message}`),
        );
        await logs.close();
      },
      actions: {
        listKeys: async (input) => keys.list(known(listKeys.parse(input ?? {}).function)),
        setKey: (input) => setKey(input, false),
        renewKey: (input) => setKey(input, true),
      },
    };
  },
});
