/**
 * eventHubTrigger through the official processor: EventHubConsumerClient with the blob checkpoint store
 * in AzureWebJobsStorage's `azure-webjobs-eventhub` container (the extension's container and layout),
 * batches of at most host.json `maxEventBatchSize` (and, with `minEventBatchSize` above 1, of at least that
 * many or what `maxWaitTime` gathered: eventhub-held.ts), cardinality `many` (one invocation per batch) or `one`,
 * `string`/`binary` data, and the extension's trigger metadata (`SequenceNumberArray` …). Partitions
 * without a checkpoint start from the beginning (the extension's default `fromStart`); a checkpoint is
 * written after every `batchCheckpointFrequency` batches whether the function succeeded or not, as in
 * Azure — Event Hubs triggers do not retry by themselves.
 */

import { setTimeout as delay } from 'node:timers/promises';
import type { CloseReason, PartitionContext, ReceivedEventData } from '@azure/event-hubs';
import type { StackClock } from '../../core/clock.ts';
import {
  appCredential,
  blobService,
  eventHubConnection,
  eventHubsErrorText,
  resolveSettingReferences,
} from '../connections.ts';
import type { RegisteredFunction, RpcTypedData } from '../core-api.ts';
import { sdkRetryOptions } from '../eventhub-retry.ts';
import type { Host, Listener, TriggerBinding, TriggerKind } from '../host.ts';
import type { TriggerInput } from '../invoke.ts';
import { Outage, Pauses } from '../listeners.ts';
import { invokeWithRetries } from '../retry.ts';
import { HeldEvents } from './eventhub-held.ts';
import { abandonOwnership } from './eventhub-ownership.ts';

const CHECKPOINT_CONTAINER = 'azure-webjobs-eventhub';
/** The runtime writes no reason for Event Hubs invocations. */
const REASON = '(null)';

function bodyText(body: unknown): string {
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body) || body instanceof Uint8Array) return Buffer.from(body).toString('utf8');
  return JSON.stringify(body);
}

const bodyBytes = (body: unknown) =>
  body instanceof Uint8Array ? Buffer.from(body) : Buffer.from(bodyText(body));

/** Per-event metadata, in the extension's names. */
function eventMetadata(event: ReceivedEventData) {
  const enqueued = event.enqueuedTimeUtc.toISOString();
  return {
    EnqueuedTimeUtc: enqueued,
    SequenceNumber: event.sequenceNumber,
    Offset: String(event.offset),
    PartitionKey: event.partitionKey ?? null,
    Properties: event.properties ?? {},
    SystemProperties: {
      'x-opt-sequence-number': event.sequenceNumber,
      'x-opt-offset': String(event.offset),
      'x-opt-enqueued-time': enqueued,
      'x-opt-partition-key': event.partitionKey ?? null,
      ...event.systemProperties,
      // As the extension repeats them here (GetSystemPropertiesForBinding), the offset as a number.
      SequenceNumber: event.sequenceNumber,
      Offset: Number(event.offset),
      PartitionKey: event.partitionKey ?? null,
      EnqueuedTimeUtc: enqueued,
    },
  };
}

const json = (value: unknown): RpcTypedData => ({ json: JSON.stringify(value) });

function eventsInput(
  trigger: TriggerBinding,
  events: ReceivedEventData[],
  partition: Record<string, string>,
): TriggerInput {
  const binary = trigger.dataType === 'binary';
  const metadata = events.map(eventMetadata);
  const partitionContext = json(partition);
  if (trigger.cardinality === 'one') {
    const [event] = events;
    const [meta] = metadata;
    const data: RpcTypedData = binary ? { bytes: bodyBytes(event?.body) } : { string: bodyText(event?.body) };
    return {
      inputData: [{ name: trigger.name, data }],
      triggerMetadata: {
        PartitionContext: partitionContext,
        ...Object.fromEntries(Object.entries(meta ?? {}).map(([k, v]) => [k, json(v)])),
        // One event's Offset is EventData.Offset, a long; only OffsetArray holds strings.
        Offset: json(Number(meta?.Offset)),
      },
      reason: REASON,
      bindingData: { ...meta },
    };
  }
  const column = <K extends keyof ReturnType<typeof eventMetadata>>(key: K) =>
    json(metadata.map((m) => m[key]));
  const data: RpcTypedData = binary
    ? { collectionBytes: { bytes: events.map((e) => bodyBytes(e.body)) } }
    : { collectionString: { string: events.map((e) => bodyText(e.body)) } };
  return {
    inputData: [{ name: trigger.name, data }],
    triggerMetadata: {
      PartitionContext: partitionContext,
      EnqueuedTimeUtcArray: column('EnqueuedTimeUtc'),
      SequenceNumberArray: column('SequenceNumber'),
      OffsetArray: column('Offset'),
      PartitionKeyArray: column('PartitionKey'),
      PropertiesArray: column('Properties'),
      SystemPropertiesArray: column('SystemProperties'),
    },
    reason: REASON,
    bindingData: {},
  };
}

/** The SDKs, loaded when the app has an Event Hubs function (they cost start time otherwise). */
const sdk = async () => ({
  ...(await import('@azure/event-hubs')),
  ...(await import('@azure/eventhubs-checkpointstore-blob')),
});

async function consumerFor(host: Host, trigger: TriggerBinding, fn: RegisteredFunction) {
  const { BlobCheckpointStore, EventHubConsumerClient } = await sdk();
  const target = eventHubConnection(host.settings, trigger);
  const { hub } = target;
  const group = trigger.consumerGroup
    ? resolveSettingReferences(String(trigger.consumerGroup), host.settings)
    : '$Default';
  const container = blobService(host.settings, undefined).getContainerClient(CHECKPOINT_CONTAINER);
  const store = new BlobCheckpointStore(container);
  // One identity per function and host, the same in every run: see eventhub-ownership.ts.
  const identifier = `${host.hostId}-${fn.name}`;
  const options = {
    identifier,
    // Ownership expires after 30 s, the .NET processor's default (the JS SDK's is 60 s).
    loadBalancingOptions: {
      strategy: 'greedy' as const,
      updateIntervalInMs: host.config.eventHubs.loadBalancingMs,
      partitionOwnershipExpirationIntervalInMs: 30_000,
    },
    retryOptions: sdkRetryOptions(host.config.eventHubs.clientRetry),
  };
  const client =
    'connection' in target
      ? new EventHubConsumerClient(group, target.connection, hub, store, options)
      : new EventHubConsumerClient(group, target.namespace, hub, appCredential(), store, options);
  const scope = {
    fullyQualifiedNamespace: client.fullyQualifiedNamespace,
    eventHubName: client.eventHubName,
    consumerGroup: group,
  };
  /** Gives up this host's ownership of `partitionId`, or of every partition (eventhub-ownership.ts). */
  const abandon = (partitionId?: string) => abandonOwnership(store, scope, identifier, partitionId);
  return { client, abandon, container };
}

/**
 * When the partition's checkpoint was written, in stack time (the blob's Last-Modified, which Azurite
 * writes in real time), as the extension reads it when it claims a partition; none: undefined. A read
 * that fails counts as none: the first held events then run at once rather than wait.
 */
async function checkpointedAt(
  { container }: Awaited<ReturnType<typeof consumerFor>>,
  context: PartitionContext,
  clock: StackClock,
): Promise<number | undefined> {
  const { fullyQualifiedNamespace, eventHubName, consumerGroup, partitionId } = context;
  // The blob checkpoint store's layout, names lower-cased as it writes them.
  const name = `${fullyQualifiedNamespace}/${eventHubName}/${consumerGroup}/checkpoint/`.toLowerCase();
  const properties = await container
    .getBlobClient(name + partitionId)
    .getProperties()
    .catch(() => undefined);
  return properties?.lastModified && clock.toStackTime(properties.lastModified.getTime());
}

/** One claim of a partition: the extension's PartitionProcessor, made anew each time a partition is claimed. */
interface Claim {
  context: PartitionContext;
  /** Stopped when the claim ends: ends retry waits, and no more runs nor checkpoints. */
  ended: Pauses;
  /** Batches run in this claim: the checkpoint frequency counts them, as the extension's _batchCounter. */
  batches: number;
  /** The batch under way (settled). */
  busy: Promise<void>;
  held?: HeldEvents;
}

async function listen(host: Host, fn: RegisteredFunction, trigger: TriggerBinding): Promise<Listener> {
  const { minBatchSize, maxBatchSize, maxWaitTimeMs } = host.config.eventHubs;
  await blobService(host.settings, undefined).getContainerClient(CHECKPOINT_CONTAINER).createIfNotExists();
  const consumer = await consumerFor(host, trigger, fn);
  const { client, abandon } = consumer;
  await abandon();
  const { checkpointFrequency } = host.config.eventHubs;
  // The processor retries by itself through an outage of Event Hubs or of the checkpoint store, and
  // resumes each partition after its checkpoint: the host logs each error and the first sign of recovery.
  const outage = new Outage({
    down: (error) => host.logs.host('warning', `Event Hubs 'Functions.${fn.name}' ${error.message}`),
    up: (failures) =>
      host.logs.host(
        'information',
        `Event Hubs 'Functions.${fn.name}' is receiving again after ${failures} error(s)`,
      ),
  });
  const checkpoints = new Outage({
    down: (error) =>
      host.logs.host('warning', `Event Hubs 'Functions.${fn.name}' checkpoint store: ${error.message}`),
    up: () => host.logs.host('information', `Event Hubs 'Functions.${fn.name}' checkpoints saved again`),
  });
  const { earliestEventPosition, latestEventPosition } = await sdk();
  // Only where a partition has no checkpoint yet: the processor resumes after a checkpoint.
  const offset = host.config.eventHubs.initialOffset;
  const startPosition =
    offset.from === 'end'
      ? latestEventPosition
      : offset.from === 'time'
        ? { enqueuedOn: offset.enqueuedOn }
        : earliestEventPosition;
  const stopping = new AbortController();
  /** minEventBatchSize above 1 holds a partition's events for functions taking many (HeldEvents). */
  const holding = trigger.cardinality !== 'one' && minBatchSize > 1;
  /** The partitions read here, one claim each (the SDK's context is one object per claim). */
  const claims = new Map<PartitionContext, Claim>();
  /** Runs a batch (each event in turn for cardinality one), then checkpoints every `checkpointFrequency` batches. */
  const run = async (events: ReceivedEventData[], claim: Claim) => {
    const { context, ended } = claim;
    const partition = {
      ConsumerGroup: context.consumerGroup,
      EventHubName: context.eventHubName,
      FullyQualifiedNamespace: context.fullyQualifiedNamespace,
      PartitionId: context.partitionId,
    };
    const groups = trigger.cardinality === 'one' ? events.map((event) => [event]) : [events];
    for (const group of groups) {
      // As the extension's single dispatch: once the claim ends, the batch's next events are not run.
      if (ended.stopped) break;
      await invokeWithRetries(host, fn, eventsInput(trigger, group, partition), ended);
    }
    // Retries or events cut short by the claim's end: no checkpoint, the batch is delivered again (at
    // least once).
    if (ended.stopped) return;
    claim.batches++;
    const last = events.at(-1);
    // A checkpoint that cannot be saved (storage down) must not end the partition's receiver: the
    // SDK would restart it from the last saved checkpoint and run those events again. The next
    // batch's checkpoint covers this one.
    if (last && claim.batches % checkpointFrequency === 0)
      await context.updateCheckpoint(last).then(
        () => checkpoints.recovered(),
        (error: Error) => checkpoints.failed(new Error(`partition ${context.partitionId}: ${error.message}`)),
      );
  };
  let restarting: Promise<void> | undefined;
  const subscribe = () =>
    client.subscribe(
      {
        async processInitialize(context: PartitionContext) {
          // Before any await: the SDK sends no events before this ends, but it swallows its errors.
          const claim: Claim = { context, ended: new Pauses(), batches: 0, busy: Promise.resolve() };
          claims.set(context, claim);
          if (!holding) return;
          const say = (level: 'debug' | 'error', message: string) =>
            host.logs.host(
              level,
              `Event Hubs 'Functions.${fn.name}' partition ${context.partitionId}: ${message}`,
            );
          claim.held = new HeldEvents({
            minBatchSize,
            maxBatchSize,
            maxWaitTimeMs,
            clock: host.clock,
            checkpointedAt: await checkpointedAt(consumer, context, host.clock),
            run: (events) => run(events, claim),
            log: (message) => say('debug', message),
            failed: (error) => say('error', error.message),
          });
        },
        /**
         * The claim ends (a stop, or the partition lost): as the extension cancels the invocation's token,
         * nothing more runs and nothing is checkpointed; the batch under way is awaited, as the processor
         * awaits it before it closes the partition.
         */
        async processClose(reason: CloseReason, context: PartitionContext) {
          const claim = claims.get(context);
          claims.delete(context);
          host.logs.host(
            'debug',
            `Event Hubs 'Functions.${fn.name}' partition ${context.partitionId}: CloseAsync, ${reason}`,
          );
          claim?.ended.stop();
          await claim?.busy;
          await claim?.held?.close();
          // Another reader took the partition: given up, load balancing claims it again once it is free,
          // and the other partitions read on, as the extension's processor stops only the partition it
          // lost. Only now, the receiver ended: a round that still saw it reading would renew it.
          if (reason === 'OwnershipLost') await abandon(context.partitionId).catch(() => {});
        },
        async processEvents(events: ReceivedEventData[], context: PartitionContext) {
          outage.recovered();
          const claim = claims.get(context);
          if (events.length === 0 || !claim) return;
          const work = claim.held ? claim.held.receive(events) : run(events, claim);
          claim.busy = work.catch(() => {});
          await work;
        },
        async processError(error: Error, context: PartitionContext) {
          const reason = eventHubsErrorText(error);
          // Without a partition, the error is load balancing's: the checkpoint store's (ownership lives there).
          if (!context.partitionId) checkpoints.failed(new Error(`load balancing: ${reason}`));
          else outage.failed(new Error(`partition ${context.partitionId}: ${reason}`));
          // The SDK ends a partition's receiver on an error it does not retry (a refused connection). If
          // storage is down too, the ownership simply expires. Another reader taking the partition ends
          // it too (ReceiverDisconnectedError), as OwnershipLost: processClose gives that one up.
          const { retryable, code } = error as { retryable?: boolean; code?: string };
          if (context.partitionId && !retryable && code !== 'ReceiverDisconnectedError') {
            await abandon(context.partitionId).catch(() => {});
            restartOnceHubAnswers();
          }
        },
      },
      { maxBatchSize, maxWaitTimeInSeconds: 1, startPosition },
    );
  let subscription = subscribe();
  /**
   * A partition whose receiver ended waits for load balancing to claim it again, and after a lost
   * connection load balancing asks the hub again only when its management call's retry comes round,
   * 30 s later (that call does not take the client's retry options). The extension's processor retries
   * on the client's policy (from 0.8 s, exponentially). So once the hub answers the client, the host
   * starts the processor again: it claims its partitions at once and reads on from their checkpoints.
   * Not more often than load balancing runs, so that a receiver that keeps failing is no busy loop.
   */
  const restartOnceHubAnswers = () => {
    restarting ??= (async () => {
      const { signal } = stopping;
      await delay(host.config.eventHubs.loadBalancingMs, undefined, { signal }).catch(() => {});
      while (!signal.aborted) {
        try {
          await client.getPartitionIds({ abortSignal: signal });
          break;
        } catch {
          // Each call has retried on the client's policy already.
          await delay(1000, undefined, { signal }).catch(() => {});
        }
      }
      if (signal.aborted) return;
      host.logs.host(
        'information',
        `Event Hubs 'Functions.${fn.name}' restarts its processor: a partition's receiver ended`,
      );
      await subscription.close();
      if (!signal.aborted) subscription = subscribe();
    })()
      .catch((error: Error) =>
        host.logs.host('warning', `Event Hubs 'Functions.${fn.name}' processor restart: ${error.message}`),
      )
      .finally(() => {
        restarting = undefined;
      });
  };
  return {
    async stop() {
      stopping.abort();
      for (const claim of claims.values()) claim.ended.stop();
      await restarting;
      await subscription.close();
      await client.close();
    },
  };
}

export const eventHubTrigger: TriggerKind = {
  type: 'eventHubTrigger',
  listen,
  /** The admin input is one event's body. */
  async adminInput(host, _fn, trigger, input) {
    const event = {
      body: input,
      enqueuedTimeUtc: host.clock.date(),
      sequenceNumber: 0,
      offset: '0',
      properties: {},
    };
    return eventsInput(trigger, [event as unknown as ReceivedEventData], {});
  },
};
