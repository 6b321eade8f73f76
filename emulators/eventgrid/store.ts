/**
 * What Event Grid must not lose: events accepted but not yet delivered (so a restart resumes their
 * delivery where the retry schedule left it) and dead-lettered events. A JSON file in the state
 * directory, or nowhere in in-memory mode.
 */
import { join } from 'node:path';
import { readJsonIfExists, writeFileAtomic } from '../core/files.ts';
import type { CloudEvent } from './cloudevents.ts';
import type { GridEvent } from './events.ts';

/** One event on its way to one subscription. Times are stack time, ms since the epoch. */
export interface PendingDelivery {
  /** Unique per event and subscription: publishers may reuse event ids. */
  key: string;
  subscription: string;
  event: GridEvent | CloudEvent;
  publishTime: number;
  /** Attempts made so far (what the next request's `aeg-delivery-count` says). */
  attempts: number;
  dueAt: number;
  lastDeliveryAttemptTime?: number;
  lastDeliveryOutcome?: string;
  lastHttpStatusCode?: number;
}

/** A dead-lettered event in the shape Event Grid writes to its dead-letter blobs, plus the subscription. */
export type DeadLetter = (GridEvent | CloudEvent) & {
  subscription: string;
  deadLetterReason: 'MaxDeliveryAttemptsExceeded' | 'TimeToLiveExceeded';
  deliveryAttempts: number;
  lastDeliveryOutcome: string;
  lastHttpStatusCode?: number;
  publishTime: string;
  lastDeliveryAttemptTime?: string;
};

export interface DeliveryState {
  pending: PendingDelivery[];
  deadLetters: DeadLetter[];
}

export interface DeliveryStore {
  load(): DeliveryState;
  save(state: DeliveryState): void;
}

export function createStore(stateDir: string | undefined): DeliveryStore {
  const empty = (): DeliveryState => ({ pending: [], deadLetters: [] });
  if (!stateDir) return { load: empty, save: () => {} };
  const path = join(stateDir, 'deliveries.json');
  return {
    load: () => readJsonIfExists<DeliveryState>(path) ?? empty(),
    // Whole-file atomic writes: a crash leaves the previous state, never half an event.
    save: (state) => writeFileAtomic(path, JSON.stringify(state)),
  };
}
