/**
 * The identity emulator: an App Service managed-identity endpoint that issues real RS256 tokens for the
 * stack's app identities, and the Entra-style issuer and key set other emulators verify them against.
 */
import { z } from 'zod';
import { defineEmulator } from '../core/emulator.ts';
import { close, createTlsServer, LOOPBACK, listen, sendJson } from '../core/http.ts';
import { identityHandler } from './routes.ts';
import { createTokenIssuer } from './tokens.ts';

export default defineEmulator({
  name: 'identity',
  options: z.object({ port: z.number().int().min(0).max(65535) }),
  async start(options, context) {
    const { tenantId, signingKey, identities } = context.secrets;
    const server = createTlsServer(context.tls);
    // The issuer names the port, so the handler exists only once bound; nobody knows the port before then.
    let handle: ReturnType<typeof identityHandler> | undefined;
    server.on('request', (req, res) => {
      if (!handle)
        return sendJson(res, 503, { error: 'temporarily_unavailable', error_description: 'Starting.' });
      handle(req, res).catch((error: Error) => {
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
    const tokens = await createTokenIssuer({ signingKey, issuer, tenantId });
    handle = identityHandler({ tenantId, issuer, jwksUri, identities, tokens });
    context.log(`managed identity endpoint ${authority}/msi/token, issuer ${issuer}`);
    return {
      endpoints: { authority, issuer, jwksUri, identityEndpoint: `${authority}/msi/token` },
      async health() {
        const response = await fetch(jwksUri);
        if (!response.ok) throw new Error(`JWKS answered ${response.status}`);
      },
      stop: () => close(server),
    };
  },
});
