/** Starts the Cosmos emulator in this process for tests and the benchmark. */
import {
  type Container,
  CosmosClient,
  type CosmosClientOptions,
  type FeedOptions,
  type SqlQuerySpec,
} from '@azure/cosmos';
import { ManagedIdentityCredential } from '@azure/identity';
import type { EmulatorContext, RunningEmulator } from '../core/emulator.ts';
import { startEmulator, testContext, testDataDir, useAppIdentityEnv } from '../core/testing.ts';
import identity from '../identity/index.ts';
import cosmos from './index.ts';

/** Used when no identity emulator runs: never contacted unless a test sends an Entra token. */
export const NO_IDENTITY = {
  issuer: 'https://127.0.0.1:9/none/v2.0',
  jwksUri: 'https://127.0.0.1:9/none/keys',
};

export interface CosmosFixture {
  context: EmulatorContext;
  running: RunningEmulator;
  endpoint: string;
  client(options?: Partial<CosmosClientOptions>): CosmosClient;
  /** Stops the emulator and starts it again on the same state (and a new port). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startCosmos(
  opts: { inMemory?: boolean; identity?: { issuer: string; jwksUri: string }; dataDir?: string } = {},
): Promise<CosmosFixture> {
  const data = opts.dataDir ? { dir: opts.dataDir, remove: () => {} } : testDataDir();
  const context = await testContext(data.dir, { inMemory: opts.inMemory });
  // A test that hits an emulator bug shows its stack (the client only sees Cosmos's 500 body).
  context.log = (line) => {
    if (line.includes('internal error')) console.error(line);
  };
  const options = { port: 0, ...(opts.identity ?? NO_IDENTITY) };
  const clients: CosmosClient[] = [];
  const fixture: CosmosFixture = {
    context,
    running: await startEmulator(cosmos, options, context),
    get endpoint() {
      return fixture.running.endpoints.cosmos as string;
    },
    client(clientOptions = {}) {
      const client = new CosmosClient({
        endpoint: fixture.endpoint,
        key: context.secrets.cosmosKey,
        connectionPolicy: { enableEndpointDiscovery: false },
        ...clientOptions,
      });
      clients.push(client);
      return client;
    },
    async restart() {
      await fixture.running.stop();
      fixture.running = await startEmulator(cosmos, options, context);
    },
    async close() {
      for (const client of clients.splice(0)) client.dispose();
      await fixture.running.stop();
      data.remove();
    },
  };
  return fixture;
}

export interface EntraFixture {
  cosmos: CosmosFixture;
  /** A client signed in as an app's managed identity, the way the app gets its token in App Service. */
  clientAs(app: string): Promise<CosmosClient>;
  close(): Promise<void>;
}

/**
 * Cosmos next to the identity emulator, with no database: tests create what they need with the key.
 * MSAL caches managed-identity tokens process-wide, so one test file can speak as one app only.
 */
export async function startCosmosWithIdentity(): Promise<EntraFixture> {
  const data = testDataDir();
  const context = await testContext(data.dir, { inMemory: true });
  const idp = await startEmulator(identity, { port: 0 }, context);
  const fixture = await startCosmos({
    inMemory: true,
    dataDir: data.dir,
    identity: idp.endpoints as { issuer: string; jwksUri: string },
  });
  let restoreEnv = () => {};
  return {
    cosmos: fixture,
    async clientAs(app) {
      restoreEnv = useAppIdentityEnv(idp, context, app);
      return fixture.client({ key: undefined, aadCredentials: new ManagedIdentityCredential() });
    },
    async close() {
      restoreEnv();
      await fixture.close();
      await idp.stop();
      data.remove();
    },
  };
}

/** Every result of a query, as `fetchAll` gives them. */
export const queryAll = async (container: Container, query: string | SqlQuerySpec, options?: FeedOptions) =>
  (await container.items.query(query, options).fetchAll()).resources;

/** Every non-empty page `fetchNext` hands out, as the SDK hands them out. */
export async function queryPages(container: Container, query: string, options: FeedOptions) {
  const iterator = container.items.query(query, options);
  const seen: unknown[][] = [];
  while (iterator.hasMoreResults()) {
    const { resources } = await iterator.fetchNext();
    if (resources.length) seen.push(resources);
  }
  return seen;
}
