/**
 * The Cosmos DB emulator: the SQL API over HTTPS as @azure/cosmos speaks it — databases, containers,
 * documents, queries, transactional batches and the change feed — with master-key and Entra ID (RBAC)
 * authorization, kept in memory or in an append-only log under the state directory. The databases and
 * containers the topology declares are created at start when missing.
 */
import type { IncomingMessage } from 'node:http';
import { get } from 'node:https';
import { z } from 'zod';
import { defineEmulator, type EmulatorContext } from '../core/emulator.ts';
import { close, LOOPBACK, listen } from '../core/http.ts';
import { createTokenVerifier, TokenError } from '../identity/verify.ts';
import { Account } from './account.ts';
import { type Credential, requiredAction, roleAllows, type Target } from './auth.ts';
import { errors } from './errors.ts';
import { provision } from './provision.ts';
import { createCosmosServer } from './server.ts';
import { fileStore, memoryStore } from './store.ts';

/** The account name Cosmos puts in its RBAC messages (the official emulator's is also "localhost"). */
const ACCOUNT = 'localhost';

/**
 * Entra ID callers: the token must be for this account (or the global Cosmos audience) and its
 * principal must hold a data role from the topology. Managing databases and containers is refused
 * to tokens whatever the role, as Cosmos does: they are created with the key (README.md here).
 */
function rbac(context: EmulatorContext, options: { issuer: string; jwksUri: string }, audiences: string[]) {
  const verifier = createTokenVerifier({ issuer: options.issuer, jwksUri: options.jwksUri });
  const { identities } = context.secrets;
  const rolesOf = (principalId: string) =>
    context.topology.cosmos.roleAssignments
      .filter((assignment) => identities[assignment.identity]?.principalId === principalId)
      .map((assignment) => assignment.role);
  return async (credential: Credential, req: IncomingMessage, target: Target) => {
    if (credential.type === 'master') return;
    let principalId: string;
    try {
      ({ principalId } = await verifier.verify(credential.token, audiences));
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
      ? fileStore(context.stateDir, () => account.dump(), context.log)
      : memoryStore();
    if (store.snapshot) account.load(store.snapshot);
    for (const record of store.records) account.apply(record);
    if (store.records.length > 0) await store.compact();
    const provisioned = provision(account, context.topology.cosmos.databases);
    await store.append(provisioned.records);
    if (provisioned.created.length > 0)
      context.log(`created from the topology: ${provisioned.created.join(', ')}`);

    const service = { account, store, clock: context.clock, endpoint: '' };
    let authorize: ReturnType<typeof rbac> = async () => {};
    const server = createCosmosServer({
      tls: context.tls,
      service,
      masterKey: Buffer.from(context.secrets.cosmosKey, 'base64'),
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
        // An unsigned request gets Cosmos's 401: proof the listener and TLS work. The CA is given
        // explicitly since the caller's process may not trust it globally.
        const status = await new Promise<number | undefined>((resolve, reject) =>
          get(service.endpoint, { ca: context.tls.ca }, (res) => {
            res.resume();
            resolve(res.statusCode);
          }).on('error', reject),
        );
        if (status !== 401) throw new Error(`cosmos answered ${status}`);
      },
      async stop() {
        await close(server);
        await store.close();
      },
      actions: {
        /** Writes the state as a snapshot now (the log is folded in). */
        compact: async () => store.compact(),
      },
    };
  },
});
