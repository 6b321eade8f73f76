/** Shared by this folder's tests: start the emulator in-process, wait for conditions, collect events. */
import {
  EventHubConsumerClient,
  type EventPosition,
  type LastEnqueuedEventProperties,
  type ReceivedEventData,
  type RetryOptions,
  type SubscribeOptions,
} from '@azure/event-hubs';
import type { TokenCredential } from '@azure/identity';
import type { RunningEmulator } from '../core/emulator.ts';
import {
  waitFor as coreWaitFor,
  startEmulator,
  type TestContext,
  testContext,
  testDataDir,
  useAppIdentityEnv,
} from '../core/testing.ts';
import identity from '../identity/index.ts';
import eventhubs from './index.ts';

export const HUB = 'taskevents';

export interface Started {
  running: RunningEmulator;
  context: TestContext;
  connectionString: string;
  dir: string;
  remove(): void;
}

export async function startEventHubs(opts: { inMemory?: boolean } = {}): Promise<Started> {
  const { dir, remove } = testDataDir();
  const context = await testContext(dir, opts);
  const running = await startEmulator(eventhubs, { port: 0, tlsPort: 0 }, context);
  return { running, context, connectionString: running.endpoints.connectionString as string, dir, remove };
}

/** Event Hubs next to the identity emulator: clients may sign in with Entra ID tokens over AMQPS. */
export interface EntraStarted extends Started {
  /** `127.0.0.1:<port>` of the TLS listener, what an SDK is given as the fully qualified namespace. */
  fullyQualifiedNamespace: string;
  /** The identity provider's issuer (tokens the emulator accepts name it). */
  issuer: string;
  /** Points @azure/identity's managed-identity environment at the emulator as this app (one app per file: MSAL caches). */
  signInAs(app: string): void;
}

export async function startEventHubsWithIdentity(): Promise<EntraStarted> {
  const { dir, remove } = testDataDir();
  const context = await testContext(dir, { inMemory: true });
  const idp = await startEmulator(identity, { port: 0 }, context);
  const { issuer, jwksUri } = idp.endpoints;
  const running = await startEmulator(eventhubs, { port: 0, tlsPort: 0, issuer, jwksUri }, context);
  let restoreEnv = () => {};
  return {
    running: {
      ...running,
      async stop() {
        restoreEnv();
        await running.stop();
        await idp.stop();
      },
    },
    context,
    connectionString: running.endpoints.connectionString as string,
    fullyQualifiedNamespace: running.endpoints.fullyQualifiedNamespace as string,
    issuer: issuer as string,
    dir,
    remove,
    signInAs(app) {
      restoreEnv = useAppIdentityEnv(idp, context, app);
    },
  };
}

/** What a consumer connects with: a connection string, or a namespace and a token credential. */
export type Connection = string | { fullyQualifiedNamespace: string; credential: TokenCredential };

/** Polls `check` until it holds; fails with `what` after `timeoutMs` (core's waitFor, check first). */
export const waitFor = (check: () => boolean, what: string, timeoutMs?: number): Promise<unknown> =>
  coreWaitFor(what, check, timeoutMs);

/** A running subscription to one partition that records events and errors as they arrive. */
export interface Recording {
  events: ReceivedEventData[];
  errors: Error[];
  /** Set once the receiver has delivered at least one (possibly empty) batch: the link is attached. */
  ready: () => boolean;
  /** The partition's last-enqueued event as last reported (with `trackLastEnqueuedEventProperties`). */
  lastEnqueued: () => LastEnqueuedEventProperties | undefined;
  close(): Promise<void>;
}

export function record(
  connection: Connection,
  partitionId: string,
  startPosition: EventPosition,
  options: Partial<SubscribeOptions> & { consumerGroup?: string; retryOptions?: RetryOptions } = {},
): Recording {
  const { consumerGroup = '$default', retryOptions, ...subscribeOptions } = options;
  const client =
    typeof connection === 'string'
      ? new EventHubConsumerClient(consumerGroup, connection, HUB, { retryOptions })
      : new EventHubConsumerClient(
          consumerGroup,
          connection.fullyQualifiedNamespace,
          HUB,
          connection.credential,
          { retryOptions },
        );
  const events: ReceivedEventData[] = [];
  const errors: Error[] = [];
  let batches = 0;
  let lastEnqueued: LastEnqueuedEventProperties | undefined;
  const subscription = client.subscribe(
    partitionId,
    {
      processEvents: async (received, context) => {
        batches++;
        events.push(...received);
        lastEnqueued = { ...context.lastEnqueuedEventProperties };
      },
      processError: async (error) => {
        errors.push(error);
      },
    },
    { startPosition, maxWaitTimeInSeconds: 0.2, ...subscribeOptions },
  );
  return {
    events,
    errors,
    ready: () => batches > 0,
    lastEnqueued: () => lastEnqueued,
    async close() {
      await subscription.close();
      await client.close();
    },
  };
}
