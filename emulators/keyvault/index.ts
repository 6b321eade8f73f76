/**
 * The Key Vault emulator: the secrets REST API over HTTPS, bearer tokens from the identity emulator,
 * the topology's access policies, soft delete, and secrets persisted in the state directory. The secrets
 * the topology declares are seeded at start with the values the stack gives.
 */
import { z } from 'zod';
import { defineEmulator } from '../core/emulator.ts';
import { close, createTlsServer, LOOPBACK, listen, probe, sendJson } from '../core/http.ts';
import { createTokenVerifier } from '../identity/verify.ts';
import { AccessPolicies } from './access.ts';
import { vaultHandler } from './routes.ts';
import { createStore } from './store.ts';
import { Vault } from './vault.ts';

const accessPolicyInput = z.object({ identity: z.string(), secrets: z.array(z.string()) });

/**
 * The secrets the vault holds at start: the topology's `keyVault.secrets` decides which (as the Azure
 * template does), the stack's `seed` gives their values. Names compare case-insensitively, as in Key Vault.
 */
function declaredSeed(
  declared: readonly string[],
  values: Record<string, string>,
  log: (message: string) => void,
): Record<string, string> {
  const byName = new Map(Object.entries(values).map(([name, value]) => [name.toLowerCase(), value]));
  const seed: Record<string, string> = {};
  for (const name of declared) {
    const value = byName.get(name.toLowerCase());
    if (value === undefined)
      throw new Error(
        `keyVault.secrets in the topology declares '${name}', but the stack gives no value for it (the vault's seed option)`,
      );
    seed[name] = value;
    byName.delete(name.toLowerCase());
  }
  if (byName.size > 0)
    log(`not seeded, not in the topology's keyVault.secrets: ${[...byName.keys()].join(', ')}`);
  return seed;
}

export default defineEmulator({
  name: 'keyvault',
  options: z.object({
    port: z.number().int().min(0).max(65535),
    /** Named in the 401 challenge: where clients get tokens (`https://127.0.0.1:P/<tenant>`). */
    authority: z.string().url(),
    issuer: z.string().url(),
    jwksUri: z.string().url(),
    /** Values (name → value, from the stack's wiring) for the secrets the topology declares. */
    seed: z.record(z.string().regex(/^[0-9a-zA-Z-]{1,127}$/), z.string()).default({}),
  }),
  async start(options, context) {
    const seed = declaredSeed(context.topology.keyVault.secrets, options.seed, context.log);
    const server = createTlsServer(context.tls);
    // Ids carry the vault's URL, which names the port: requests are served once it is known.
    let handle: ReturnType<typeof vaultHandler> | undefined;
    server.on('request', (req, res) => {
      if (!handle) return sendJson(res, 503, { error: { code: 'ServiceUnavailable', message: 'Starting.' } });
      handle(req, res).catch((error: Error) => {
        context.log(`request failed: ${error.message}`);
        if (res.headersSent) return res.destroy();
        sendJson(res, 500, {
          error: { code: 'InternalServerError', message: 'An internal error occurred.' },
        });
      });
    });
    const port = await listen(server, options.port);
    const baseUrl = `https://${LOOPBACK}:${port}/`;
    const vault = new Vault(createStore(context.stateDir), context.clock, baseUrl);
    const seeded = vault.seed(seed);
    if (seeded.length > 0) context.log(`seeded ${seeded.join(', ')}`);
    const policies = new AccessPolicies(context.topology, context.secrets.identities);
    handle = vaultHandler({
      vault,
      policies,
      verifier: createTokenVerifier({ issuer: options.issuer, jwksUri: options.jwksUri }),
      baseUrl,
      issuer: options.issuer,
      challenge: `Bearer authorization="${options.authority}", resource="https://vault.azure.net"`,
      log: context.log,
    });
    context.log(`vault ${baseUrl}`);
    return {
      endpoints: { vault: baseUrl },
      async health() {
        // An unauthenticated request must get the challenge: that is the vault answering.
        const status = await probe(`${baseUrl}secrets?api-version=7.4`, { ca: context.tls.ca });
        if (status !== 401) throw new Error(`vault answered ${status}`);
      },
      stop: () => close(server),
      actions: {
        async setAccessPolicy(input) {
          const { identity, secrets } = accessPolicyInput.parse(input);
          policies.set(identity, secrets);
          return { identity, secrets };
        },
      },
    };
  },
});
