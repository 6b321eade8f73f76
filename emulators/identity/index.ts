/**
 * The identity emulator: an App Service managed-identity endpoint that issues real RS256 tokens for the
 * stack's app identities, the Entra-style issuer and key set other emulators verify them against, and
 * the sign-in half: an Entra-shaped OpenID Connect provider for the topology's app registrations and
 * test users, with Graph's `GET /v1.0/me`. README.md lists the routes and how they differ from Entra.
 */
import { z } from 'zod';
import { defineEmulator } from '../core/emulator.ts';
import {
  BodyTooLargeError,
  close,
  createTlsServer,
  LOOPBACK,
  listen,
  probe,
  sendJson,
} from '../core/http.ts';
import { loadDirectory, testUsers } from './directory.ts';
import { graphHandler } from './graph.ts';
import { loginHandler } from './login.ts';
import { createProvider, ROUTES } from './provider.ts';
import { identityHandler } from './routes.ts';
import { createTokenIssuer } from './tokens.ts';
import { createTokenVerifier } from './verify.ts';

/** Absolute URIs by application name (of the topology's directory); an application not named has none. */
const urisByApp = z.record(z.string(), z.array(z.string().url())).default({});

export default defineEmulator({
  name: 'identity',
  options: z.object({
    port: z.number().int().min(0).max(65535),
    redirectUris: urisByApp,
    postLogoutRedirectUris: urisByApp,
  }),
  async start(options, context) {
    const { tenantId, signingKey, identities } = context.secrets;
    if (!signingKey) throw new Error('the identity provider was given no signing key');
    // Checked before listening: redirect URIs for an application the topology lacks refuse the start.
    const directory = loadDirectory(context.topology, context.secrets, options);
    const server = createTlsServer(context.tls);
    // The issuer names the port, so the handler exists only once bound; nobody knows the port before then.
    let handle: ReturnType<typeof identityHandler> | undefined;
    server.on('request', (req, res) => {
      if (!handle)
        return sendJson(res, 503, { error: 'temporarily_unavailable', error_description: 'Starting.' });
      handle(req, res).catch((error: Error) => {
        if (error instanceof BodyTooLargeError && !res.headersSent)
          return sendJson(res, 413, { error: 'invalid_request', error_description: error.message });
        context.log(`request failed: ${error.message}`);
        if (!res.headersSent)
          sendJson(res, 500, { error: 'server_error', error_description: 'Internal error.' });
        else res.destroy();
      });
    });
    const port = await listen(server, options.port);
    const authority = `https://${LOOPBACK}:${port}`;
    const issuer = `${authority}/${tenantId}/v2.0`;
    const jwksUri = `${authority}/${tenantId}/discovery/v2.0/keys`;
    const sites = Object.fromEntries(
      Object.entries(identities).flatMap(([name, identity]) => {
        const site = context.topology.identities[name]?.app;
        return site ? [[identity.clientId, site]] : [];
      }),
    );
    const tokens = await createTokenIssuer({ signingKey, issuer, tenantId, sites });
    const provider = createProvider({
      issuer,
      tenantId,
      signingKey,
      cookieKey: context.secrets.directory.cookieKey,
      directory,
      log: context.log,
    });
    const verifier = createTokenVerifier({ issuer, jwksUri, keys: tokens.publicJwks });
    handle = identityHandler({
      tenantId,
      authority,
      issuer,
      jwksUri,
      identities,
      tokens,
      provider: provider.callback(),
      login: loginHandler(provider, directory, tenantId),
      graph: graphHandler(directory, verifier),
      directory,
    });
    context.log(`managed identity endpoint ${authority}/msi/token, issuer ${issuer}`);
    const tenantUrl = `${authority}/${tenantId}`;
    return {
      endpoints: {
        authority,
        issuer,
        jwksUri,
        identityEndpoint: `${authority}/msi/token`,
        openIdConfiguration: `${issuer}/.well-known/openid-configuration`,
        authorize: `${tenantUrl}${ROUTES.authorization}`,
        token: `${tenantUrl}${ROUTES.token}`,
        logout: `${tenantUrl}${ROUTES.end_session}`,
        graph: `${authority}/v1.0`,
      },
      // For stack.json: how a person signs in as each test user (passwords included; never logged).
      actions: { testUsers: async () => testUsers(directory) },
      async health() {
        const status = await probe(jwksUri, { ca: context.tls.ca });
        if (status !== 200) throw new Error(`JWKS answered ${status}`);
      },
      stop: () => close(server),
    };
  },
});
