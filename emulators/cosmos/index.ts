/**
 * The Cosmos DB emulator: the SQL API over HTTPS as @azure/cosmos speaks it — databases, containers,
 * documents, queries, transactional batches and the change feed — with master-key and Entra ID (RBAC)
 * authorization, kept in memory or in an append-only log under the state directory. The databases and
 * containers the topology declares are created at start when missing.
 */
import { createSecretKey } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { defineEmulator, type EmulatorContext } from '../core/emulator.ts';
import { close, LOOPBACK, listen, probe } from '../core/http.ts';
import { createTokenVerifier, TokenError, type TokenVerifier } from '../identity/verify.ts';
import { Account } from './account.ts';
import { type Credential, requiredAction, roleAllows, type Target } from './auth.ts';
import { errors } from './errors.ts';
import { provision } from './provision.ts';
import { ACCOUNT } from './resources.ts';
import { createCosmosServer } from './server.ts';
import { fileStore, memoryStore } from './store.ts';

/** Past this many distinct live tokens the cache starts over (a client reuses one token for an hour). */
const MAX_CACHED_TOKENS = 1000;

/**
 * The principal of a token, verified once and then remembered by the token's text until its `exp`:
 * every request of a client carries the same token, and a signature check costs more than the request.
 */
function verifiedTokens(verifier: TokenVerifier, audiences: string[]) {
  const verified = new Map<string, { principalId: string; expiresOn: number }>();
  return async (token: string): Promise<string> => {
    const known = verified.get(token);
    if (known && Date.now() < known.expiresOn) return known.principalId;
    verified.delete(token);
    const caller = await verifier.verify(token, audiences);
    if (verified.size >= MAX_CACHED_TOKENS) verified.clear();
    verified.set(token, { principalId: caller.principalId, expiresOn: caller.expiresOn });
    return caller.principalId;
  };
}

/**
 * Entra ID callers: the token must be for this account (or the global Cosmos audience) and its
 * principal must hold a data role from the topology. Managing databases and containers is refused
 * to tokens whatever the role, as Cosmos does: they are created with the key (README.md here).
 */
function rbac(context: EmulatorContext, options: { issuer: string; jwksUri: string }, audiences: string[]) {
  const principalOf = verifiedTokens(
    createTokenVerifier({ issuer: options.issuer, jwksUri: options.jwksUri }),
    audiences,
  );
  const { identities } = context.secrets;
  const rolesOf = (principalId: string) =>
    context.topology.cosmos.roleAssignments
      .filter((assignment) => identities[assignment.identity]?.principalId === principalId)
      .map((assignment) => assignment.role);
  return async (credential: Credential, req: IncomingMessage, target: Target) => {
    if (credential.type === 'master') return;
    let principalId: string;
    try {
      principalId = await principalOf(credential.token);
    } catch (error) {
      if (error instanceof TokenError) throw errors.badToken();
      throw error;
    }
    const action = requiredAction(req.method ?? '', target, req.headers);
    const path = `/${target.segments.join('/')}`;
    if (action === 'control') throw errors.aadControlPlane(ACCOUNT, req.method ?? '', path);
    if (!rolesOf(principalId).some((role) => roleAllows(role, action))) {
      throw errors.rbacDenied(ACCOUNT, principalId, action, path);
    }
  };
}

export default defineEmulator({
  name: 'cosmos',
  options: z.object({
    port: z.number().int().min(0).max(65535),
    /** The identity emulator's issuer and key set, for Entra ID tokens. */
    issuer: z.string().url(),
    jwksUri: z.string().url(),
  }),
  async start(options, context) {
    const account = new Account(context.clock);
    const store = context.stateDir
      ? fileStore(context.stateDir, {
          dump: () => account.dump(),
          log: context.log,
          // After the turn that answers the refused write (its 500 goes out before the stop).
          failed: (error) =>
            setImmediate(() =>
              context.crash(`the log could not be written (${error.message}): starting again from its files`),
            ),
        })
      : memoryStore();
    const saved = store.load();
    if (saved.snapshot) account.load(saved.snapshot);
    for (const record of saved.records) account.apply(record);
    if (saved.records.length > 0) store.compact();
    const provisioned = provision(account, context.topology.cosmos.databases);
    store.append(provisioned.records);
    if (provisioned.created.length > 0)
      context.log(`created from the topology: ${provisioned.created.join(', ')}`);

    const service = { account, store, clock: context.clock, endpoint: '' };
    let authorize: ReturnType<typeof rbac> = async () => {};
    const server = createCosmosServer({
      tls: context.tls,
      service,
      masterKey: createSecretKey(Buffer.from(context.secrets.cosmosKey, 'base64')),
      authorize: (credential, req, target) => authorize(credential, req, target),
      log: context.log,
    });
    const port = await listen(server, options.port);
    // Locations and the token audience name the bound port, known only now.
    service.endpoint = `https://${LOOPBACK}:${port}/`;
    authorize = rbac(context, options, [
      `https://${LOOPBACK}:${port}`,
      `https://localhost:${port}`,
      'https://cosmos.azure.com',
    ]);
    context.log(`cosmos: SQL API on ${service.endpoint}`);

    return {
      endpoints: { cosmos: service.endpoint },
      async health() {
        // An unsigned request gets Cosmos's 401: proof the listener and TLS work.
        const status = await probe(service.endpoint, { ca: context.tls.ca });
        if (status !== 401) throw new Error(`cosmos answered ${status}`);
      },
      async stop() {
        await close(server);
        store.close();
      },
      actions: {
        /** Writes the state as a snapshot now (the log is folded in). */
        compact: async () => store.compact(),
      },
    };
  },
});
