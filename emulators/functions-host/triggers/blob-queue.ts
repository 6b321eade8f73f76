/**
 * When a failed blob runs again, as the storage extension 5.x decides it: each blob to run is a message
 * in the host's one blob trigger queue (`azure-webjobs-blobtrigger-<hostId>`), read by one
 * `QueueListener` for all of the host's blob triggers. A failed run's message is made visible again
 * at once (its `QueuesOptions`, built from `extensions.blobs` alone, keep `VisibilityTimeout` 0; host.json's
 * `extensions.queues` does not reach them) and is dequeued by the listener's next poll. The listener polls
 * again at once after a poll that found messages, then waits as `RandomizedExponentialBackoffStrategy`
 * says: 100 ms after that first empty poll, then 100 ms plus 100 ms × 2^(n−1) ± 20 % (~200, 300, 500,
 * 900 ms …), up to the `MaxPollingInterval` those options keep (1 minute). A message enqueued (a blob
 * found) wakes the listener at once. Azurite runs no queue service here, so the queue is simulated:
 * only the times of its polls, never a request.
 */
import type { Host } from '../host.ts';

/** QueuePollingIntervals.Minimum. */
export const MIN_POLL_MS = 100;
/** QueuePollingIntervals.DefaultMaximum: the blob queue's options never set another. */
export const MAX_POLL_MS = 60_000;
const RANDOMIZATION = 0.2;

/** The queue listener's waits between empty polls (RandomizedExponentialBackoffStrategy). */
export class PollingBackoff {
  #current = 0;
  #exponent = 0;

  constructor(private readonly random: () => number = Math.random) {}

  /** The wait before the next poll; `found`: messages were found since the last wait (back to the minimum). */
  next(found: boolean): number {
    if (found) {
      this.#current = MIN_POLL_MS;
      this.#exponent = 1;
    } else if (this.#current !== MAX_POLL_MS) {
      let interval = MIN_POLL_MS;
      if (this.#exponent > 0) {
        const factor = 1 - RANDOMIZATION + this.random() * 2 * RANDOMIZATION;
        interval += factor * 2 ** (this.#exponent - 1) * MIN_POLL_MS;
      }
      if (interval < MAX_POLL_MS) {
        this.#current = interval;
        this.#exponent++;
      } else this.#current = MAX_POLL_MS;
    }
    return this.#current;
  }
}

interface Released {
  owner: object;
  dequeue: () => void;
}

/** The host's blob trigger queue, as far as retries need it. */
export class BlobTriggerQueue {
  readonly #backoff: PollingBackoff;
  readonly #now: () => number;
  #released: Released[] = [];
  /** When the listener polls next (ms). */
  #nextPoll: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: { random?: () => number; now?: () => number } = {}) {
    this.#backoff = new PollingBackoff(options.random);
    this.#now = options.now ?? Date.now;
    this.#nextPoll = this.#now();
  }

  /**
   * Messages were enqueued (blobs found): the listener polls at once and finds them, so its next
   * empty poll (right after: they are invisible while they run) waits the minimum again.
   */
  enqueued(): void {
    this.#poll(true);
  }

  /** A failed run's message, visible again at once: `dequeue` runs it at the listener's next poll. */
  release(owner: object, dequeue: () => void): void {
    this.#released.push({ owner, dequeue });
    // Idle, the listener went on polling (finding nothing): catch its schedule up.
    if (this.#timer === undefined) this.#catchUp();
    this.#schedule();
  }

  /** A stopped listener's messages stay in the queue; a restarted host finds them by their receipts. */
  leave(owner: object): void {
    this.#released = this.#released.filter((message) => message.owner !== owner);
    if (this.#released.length === 0) this.#cancel();
  }

  #catchUp(): void {
    const now = this.#now();
    while (this.#nextPoll <= now) this.#nextPoll += this.#backoff.next(false);
  }

  #poll(enqueued: boolean): void {
    const visible = this.#released;
    this.#released = [];
    this.#nextPoll = this.#now() + this.#backoff.next(enqueued || visible.length > 0);
    for (const message of visible) message.dequeue();
    this.#schedule();
  }

  #schedule(): void {
    this.#cancel();
    if (this.#released.length === 0) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#poll(false);
      },
      Math.max(0, this.#nextPoll - this.#now()),
    );
    this.#timer.unref();
  }

  #cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

const queueOfHost = new WeakMap<Host, BlobTriggerQueue>();
/** The host's blob trigger queue, shared by its blob triggers. */
export function blobTriggerQueue(host: Host): BlobTriggerQueue {
  let queue = queueOfHost.get(host);
  if (!queue) {
    queue = new BlobTriggerQueue();
    queueOfHost.set(host, queue);
  }
  return queue;
}
