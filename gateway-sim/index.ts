/**
 * The API gateway simulator: behaves like Azure API Management for the APIs, policies, products,
 * subscriptions and authorization servers of `system/gateway/` — the files that are imported into APIM.
 * Serves HTTPS on the stack's certificate; reloads when an artifact changes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { z } from 'zod';
import { defineEmulator, type EmulatorContext, type RunningEmulator } from '../emulators/core/emulator.ts';
import { close, createTlsServer, LOOPBACK, listen, probe } from '../emulators/core/http.ts';
import { type GatewayConfig, loadArtifacts } from './artifacts.ts';
import { continueOnRead, discardBody } from './continue.ts';
import { apimError, type GatewayAnswer, invalidUrl } from './errors.ts';
import { createJwtValidator } from './jwt.ts';
import { createLimits } from './limits.ts';
import { createPortal, PORTAL_PATH } from './portal.ts';
import { readAhead } from './read-ahead.ts';
import { gatewayHandler, HEALTH_PATH } from './routes.ts';
import { STATES } from './schemas.ts';
import { createSubscriptionRegistry, subscriptionKeys } from './subscriptions.ts';
import { TraceStore } from './trace.ts';

/** An answer the gateway makes before routing, with its length as routed answers have. */
const reply = (res: ServerResponse, answer: GatewayAnswer) =>
  res
    .writeHead(answer.status, { ...answer.headers, 'content-length': String(Buffer.byteLength(answer.body)) })
    .end(answer.body);

/** Edits arrive as several file events; one reload after they settle. */
const RELOAD_DELAY_MS = 150;

const describe = (config: GatewayConfig) =>
  config.apis
    .map(
      (api) =>
        `${api.displayName} /${api.path} (${api.operations.map((op) => `${op.method} ${op.urlTemplate}`).join(', ')})`,
    )
    .join('; ');

const optionsSchema = z.object({
  port: z.number().int().min(0).max(65535),
  /** The `system/gateway/` folder to enforce (absolute, or relative to the working directory). */
  artifactsDir: z.string().min(1),
  /** Values of the named values `named-values.json` declares (backend addresses, keys, identity). */
  namedValues: z.record(z.string(), z.string()).default({}),
  /** The developer portal's sign-in (the `developerPortal` app registration); without it, no portal. */
  portal: z
    .object({ authority: z.url(), clientId: z.string().min(1), clientSecret: z.string().min(1) })
    .optional(),
});
export default defineEmulator({
  name: 'gateway',
  options: optionsSchema,
  load: async (options) => readAhead(options),
  // The watchers the load made are the start's from then on: any failure of the start closes them.
  start: (options, context, ahead) =>
    startGateway(options, context, ahead).catch((error) => {
      ahead.watchers.close();
      throw error;
    }),
});

async function startGateway(
  options: z.output<typeof optionsSchema>,
  context: EmulatorContext,
  ahead: ReturnType<typeof readAhead>,
): Promise<RunningEmulator> {
  const dir = resolve(options.artifactsDir);
  const load = () => loadArtifacts(dir, options.namedValues);
  const watchers = ahead.watchers;
  // An ArtifactError here refuses the start, naming file, line and policy.
  let config = ahead.configFor(options) ?? load();
  // A change while it starts is reloaded once it has started.
  let changedMeanwhile = false;
  watchers.onChange = () => {
    changedMeanwhile = true;
  };
  const subscriptions = createSubscriptionRegistry(context.secrets, context.stateDir, context.clock);
  subscriptions.started(config.subscriptions);
  const traces = new TraceStore();
  const server = createTlsServer(context.tls);
  let handle: ReturnType<typeof gatewayHandler> | undefined;
  let portal: ReturnType<typeof createPortal> | undefined;
  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', origin);
    } catch {
      // Node's parser passes absolute-form targets that are no URL. Not logged: it may hold a key.
      context.log(`${req.method} (a request target that is not a URL) → 400`);
      discardBody(req, res);
      return reply(res, invalidUrl());
    }
    if (portal && (await portal(req, res, url))) return;
    await handle?.(req, res, url);
  };
  server.on('checkContinue', (req, res) => {
    continueOnRead(req, res);
    server.emit('request', req, res);
  });
  server.on('request', (req, res) => {
    if (!handle) return res.writeHead(503).end();
    serve(req, res).catch((error: Error) => {
      context.log(`request failed: ${error.message}`);
      if (res.headersSent) return res.destroy();
      reply(res, apimError(500, 'Internal server error'));
    });
  });
  const port = await listen(server, options.port);
  const origin = `https://${LOOPBACK}:${port}`;
  if (options.portal)
    portal = createPortal({
      gatewayUrl: origin,
      options: options.portal,
      config: () => config,
      secrets: context.secrets,
      log: context.log,
    });
  handle = gatewayHandler({
    origin,
    config: () => config,
    subscriptions,
    traces,
    limits: createLimits(context.clock),
    validateJwt: createJwtValidator(),
    log: context.log,
  });
  context.log(`gateway ${origin}: ${describe(config)}`);

  // Reload on any change of the artifacts or the OpenAPI documents they import.
  let timer: NodeJS.Timeout | undefined;
  const reload = () => {
    try {
      config = load();
      subscriptions.started(config.subscriptions);
      context.log(`reloaded ${dir}: ${describe(config)}`);
    } catch (error) {
      context.log(`kept the last good configuration: ${(error as Error).message}`);
    }
    watchers.watch(config.files);
  };
  watchers.onChange = () => {
    clearTimeout(timer);
    timer = setTimeout(reload, RELOAD_DELAY_MS);
  };
  watchers.watch(config.files);
  if (changedMeanwhile) watchers.onChange();

  return {
    endpoints: { gatewayUrl: origin, ...(portal && { portalUrl: `${origin}${PORTAL_PATH}` }) },
    async health() {
      const status = await probe(`${origin}${HEALTH_PATH}`, { ca: context.tls.ca });
      if (status !== 200) throw new Error(`${HEALTH_PATH} answered ${status}`);
    },
    async stop() {
      clearTimeout(timer);
      watchers.close();
      await close(server);
    },
    actions: {
      /** Every subscription with its scope, state and keys (for the control API and the portal). */
      subscriptions: async () =>
        config.subscriptions.map((subscription) => ({
          name: subscription.name,
          displayName: subscription.displayName,
          scope: subscription.scope,
          state: subscriptions.state(subscription),
          ...subscriptionKeys(subscription, context.secrets),
        })),
      /** `{ name, state }`: suspend, cancel or reactivate a subscription; takes effect at once. */
      setSubscriptionState: async (input) => {
        const { name, state } = z.object({ name: z.string(), state: z.enum(STATES) }).parse(input);
        if (!config.subscriptions.some((subscription) => subscription.name === name))
          throw new Error(`no subscription ${name}`);
        subscriptions.setState(name, state);
        context.log(`subscription ${name} is now ${state}`);
        return { name, state };
      },
      /** The APIs, their operations and OAuth 2.0 servers (client secret left out), for the portal. */
      apis: async () =>
        config.apis.map((api) => {
          const { clientSecret: _, ...server } =
            (api.authorizationServer && config.authorizationServers[api.authorizationServer]) || {};
          return {
            name: api.name,
            displayName: api.displayName,
            path: api.path,
            keyHeader: api.keyHeader,
            keyQuery: api.keyQuery,
            operations: api.operations.map(({ name, displayName, description, method, urlTemplate }) => ({
              name,
              displayName,
              description,
              method,
              urlTemplate,
            })),
            authorizationServer: api.authorizationServer && { name: api.authorizationServer, ...server },
          };
        }),
    },
  };
}
