/**
 * Push delivery as Event Grid does it: each event to each subscription whose filter it passes, one event
 * per request (the default batch size of 1), failures retried on Event Grid's schedule on the stack clock,
 * dead-lettered once retrying is pointless or the event's time to live is over.
 */
import { randomUUID } from 'node:crypto';
import type { StackClock } from '../core/clock.ts';
import type { EventSubscription, Topology } from '../core/topology.ts';
import type { CloudEvent } from './cloudevents.ts';
import type { GridEvent } from './events.ts';
import type { DeadLetter, DeliveryStore, PendingDelivery } from './store.ts';
import { createWebhook } from './webhook.ts';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** Waits after the 1st, 2nd … failed attempt; every 12 hours after the last of these. */
const RETRY_SCHEDULE_MS = [
  10 * SECOND,
  30 * SECOND,
  MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  30 * MINUTE,
  HOUR,
  3 * HOUR,
  6 * HOUR,
];
const LATER_RETRY_MS = 12 * HOUR;
/** The default retry policy: 30 attempts, 1440 minutes to live. */
const MAX_DELIVERY_ATTEMPTS = 30;
const EVENT_TTL_MS = 1440 * MINUTE;
/**
 * Answers that retrying cannot fix, by endpoint type (Event Grid's "delivery and retry" table): the
 * event is dead-lettered at once. A webhook's 401 is one of them; an Azure resource's 401 is retried.
 */
const NO_RETRY: Record<EventSubscription['endpointType'], ReadonlySet<number>> = {
  AzureFunction: new Set([400, 403, 413]),
  WebHook: new Set([400, 401, 403, 413]),
};
/** How many attempts the `deliveries` action remembers. */
const ATTEMPT_LOG_SIZE = 1000;

export interface DeliveryAttempt {
  eventId: string;
  subscription: string;
  /** The request's `aeg-delivery-count`: attempts made before this one. */
  deliveryCount: number;
  at: string;
  status?: number;
  outcome: string;
  error?: string;
}

export interface DelivererOptions {
  topics: Topology['eventGrid']['topics'];
  functionsBaseUrl: string | undefined;
  extensionKey: string;
  clock: StackClock;
  store: DeliveryStore;
  log(message: string): void;
}

export function createDeliverer(options: DelivererOptions) {
  const { clock, store, log } = options;
  const subscriptions = new Map(options.topics.map((topic) => [topic.name, topic.subscriptions]));
  const byName = new Map(options.topics.flatMap((topic) => topic.subscriptions.map((s) => [s.name, s])));
  const state = store.load();
  const pending = new Map(state.pending.map((item) => [item.key, item]));
  const deadLetters: DeadLetter[] = state.deadLetters;
  const attempts: DeliveryAttempt[] = [];
  const webhook = createWebhook(options);
  const timers = new Map<string, () => void>();
  const inFlight = new Map<string, { abort: AbortController; done: Promise<void> }>();
  let stopped = false;

  const save = () => store.save({ pending: [...pending.values()], deadLetters });

  function deadLetter(item: PendingDelivery, reason: DeadLetter['deadLetterReason']) {
    pending.delete(item.key);
    const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
    const record: DeadLetter = {
      ...item.event,
      subscription: item.subscription,
      deadLetterReason: reason,
      deliveryAttempts: item.attempts,
      lastDeliveryOutcome: item.lastDeliveryOutcome ?? 'NotAttempted',
      ...(item.lastHttpStatusCode !== undefined && { lastHttpStatusCode: item.lastHttpStatusCode }),
      publishTime: iso(item.publishTime) as string,
      ...(item.lastDeliveryAttemptTime !== undefined && {
        lastDeliveryAttemptTime: iso(item.lastDeliveryAttemptTime),
      }),
    };
    deadLetters.push(record);
    save();
    log(
      `dead-lettered event ${item.event.id} for ${item.subscription} (${reason}, ${record.lastDeliveryOutcome})`,
    );
  }

  async function attempt(item: PendingDelivery) {
    timers.delete(item.key);
    if (stopped || !pending.has(item.key)) return;
    const subscription = byName.get(item.subscription);
    if (!subscription) {
      // Deleting a subscription discards what was still on its way to it, as in Azure.
      pending.delete(item.key);
      log(`dropped event ${item.event.id}: subscription ${item.subscription} no longer exists`);
      return save();
    }
    const expiresAt = item.publishTime + EVENT_TTL_MS;
    if (clock.now() >= expiresAt) return deadLetter(item, 'TimeToLiveExceeded');
    const abort = new AbortController();
    const result = webhook.send(subscription, item.event, item.attempts, abort.signal);
    inFlight.set(item.key, { abort, done: result.then(() => {}) });
    const { status, outcome, error } = await result;
    inFlight.delete(item.key);
    // Cut short by stop(): not an attempt; the saved state still holds the event as it was.
    if (stopped) return;
    const now = clock.now();
    attempts.push({
      eventId: item.event.id,
      subscription: item.subscription,
      deliveryCount: item.attempts,
      at: new Date(now).toISOString(),
      ...(status !== undefined && { status }),
      outcome,
      ...(error !== undefined && { error }),
    });
    if (attempts.length > ATTEMPT_LOG_SIZE) attempts.shift();
    item.attempts += 1;
    item.lastDeliveryAttemptTime = now;
    item.lastDeliveryOutcome = outcome;
    if (status === undefined) delete item.lastHttpStatusCode;
    else item.lastHttpStatusCode = status;
    if (outcome === 'Delivered') {
      pending.delete(item.key);
      return save();
    }
    if (
      (status !== undefined && NO_RETRY[subscription.endpointType].has(status)) ||
      item.attempts >= MAX_DELIVERY_ATTEMPTS
    )
      return deadLetter(item, 'MaxDeliveryAttemptsExceeded');
    // A retry due after the time to live becomes the expiry itself.
    item.dueAt = Math.min(now + (RETRY_SCHEDULE_MS[item.attempts - 1] ?? LATER_RETRY_MS), expiresAt);
    save();
    schedule(item);
  }

  function schedule(item: PendingDelivery) {
    const run = () =>
      attempt(item).catch((error: Error) => log(`delivery of ${item.event.id} failed: ${error.message}`));
    // clock.at calls back at once when already due, before handing out its canceller: the attempt waits a
    // turn so that it finds its timer registered (and the publish that queued it is answered first).
    timers.set(
      item.key,
      clock.at(item.dueAt, () => setImmediate(run)),
    );
  }

  for (const item of pending.values()) schedule(item);

  return {
    /** Queues the events for every subscription whose filter they pass, durably, before the publish is answered. */
    publish(topic: string, events: (GridEvent | CloudEvent)[]): void {
      const now = clock.now();
      const queued: PendingDelivery[] = [];
      for (const event of events) {
        for (const subscription of subscriptions.get(topic) ?? []) {
          const types = subscription.eventTypes.map((type) => type.toLowerCase());
          const type = 'specversion' in event ? event.type : event.eventType;
          if (types.length > 0 && !types.includes(type.toLowerCase())) continue;
          queued.push({
            key: randomUUID(),
            subscription: subscription.name,
            event,
            publishTime: now,
            attempts: 0,
            dueAt: now,
          });
        }
      }
      if (queued.length === 0) return;
      for (const item of queued) pending.set(item.key, item);
      save();
      for (const item of queued) schedule(item);
    },
    deliveries: () => ({
      attempts: [...attempts],
      pending: [...pending.values()].map((item) => ({
        eventId: item.event.id,
        subscription: item.subscription,
        deliveryAttempts: item.attempts,
        nextAttemptAt: new Date(item.dueAt).toISOString(),
      })),
    }),
    deadLetters: () => [...deadLetters],
    async stop(): Promise<void> {
      stopped = true;
      for (const cancel of timers.values()) cancel();
      timers.clear();
      for (const { abort } of inFlight.values()) abort.abort();
      await Promise.all([...inFlight.values()].map(({ done }) => done));
    },
  };
}

export type Deliverer = ReturnType<typeof createDeliverer>;
