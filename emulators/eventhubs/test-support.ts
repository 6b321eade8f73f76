/** Shared by this folder's tests: start the emulator in-process, wait for conditions, collect events. */
import {
  EventHubConsumerClient,
  type EventPosition,
  type LastEnqueuedEventProperties,
  type ReceivedEventData,
  type SubscribeOptions,
} from '@azure/event-hubs';
import type { EmulatorContext, RunningEmulator } from '../core/emulator.ts';
import { waitFor as coreWaitFor, startEmulator, testContext, testDataDir } from '../core/testing.ts';
import eventhubs from './index.ts';

export const HUB = 'taskevents';

export interface Started {
  running: RunningEmulator;
  context: EmulatorContext;
  connectionString: string;
  dir: string;
  remove(): void;
}

export async function startEventHubs(opts: { inMemory?: boolean } = {}): Promise<Started> {
  const { dir, remove } = testDataDir();
  const context = await testContext(dir, opts);
  const running = await startEmulator(eventhubs, { port: 0 }, context);
  return { running, context, connectionString: running.endpoints.connectionString as string, dir, remove };
}

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
  connectionString: string,
  partitionId: string,
  startPosition: EventPosition,
  options: Partial<SubscribeOptions> & { consumerGroup?: string } = {},
): Recording {
  const client = new EventHubConsumerClient(options.consumerGroup ?? '$default', connectionString, HUB);
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
    { startPosition, maxWaitTimeInSeconds: 0.2, ...options },
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
