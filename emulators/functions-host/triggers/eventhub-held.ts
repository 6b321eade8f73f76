/**
 * host.json `minEventBatchSize` (above 1) and `maxWaitTime` for an Event Hubs function taking many
 * events, as the extension's PartitionProcessor honours them (one of these per partition and claim):
 * received events are held until there are at least `minEventBatchSize`, then run, at most
 * `maxEventBatchSize` at a time; a wait started when events are left held runs them as a partial batch
 * once `maxWaitTime` has passed. The first wait of a claim is shortened by the time since the partition's
 * checkpoint was written (none: no wait), so that a partition taken over keeps its interval. Waits are on
 * the stack clock, as the change feed's poll delay: moving the clock ends them.
 */
import type { ReceivedEventData } from '@azure/event-hubs';
import type { StackClock } from '../../core/clock.ts';

export interface HeldEventsOptions {
  minBatchSize: number;
  maxBatchSize: number;
  maxWaitTimeMs: number;
  clock: StackClock;
  /** Stack time at which the partition's checkpoint was written when it was claimed (none: undefined). */
  checkpointedAt: number | undefined;
  /** Runs a batch and checkpoints it as the batch checkpoint frequency says. */
  run(events: ReceivedEventData[]): Promise<void>;
  /** The extension's Debug lines. */
  log(message: string): void;
  /** A batch the wait ran failed outside any function (the processor reports a received one's). */
  failed(error: Error): void;
}

/** The extension's first wait of a claim (GetAdjustedMaxWaitTime). */
export function firstWaitMs(maxWaitMs: number, checkpointedAt: number | undefined, now: number): number {
  if (checkpointedAt === undefined) return 0;
  return Math.max(0, maxWaitMs - (now - checkpointedAt));
}

export class HeldEvents {
  #held: ReceivedEventData[] = [];
  #ranOnce = false;
  /** The wait under way (its cancel); a wait that fires after being replaced does nothing. */
  #wait: (() => void) | undefined;
  #closed = false;
  /** One thing at a time per partition (the extension's semaphore): a receive, the wait's batch, the close. */
  #turn: Promise<void> = Promise.resolve();

  constructor(private readonly options: HeldEventsOptions) {}

  /** Events the processor received for the partition. */
  receive(events: ReceivedEventData[]): Promise<void> {
    return this.#exclusive(async () => {
      this.#held.push(...events);
      if (this.#held.length >= this.options.minBatchSize) {
        await this.#runHeld();
        // A batch ran: the wait starts afresh for what is left.
        this.#cancelWait();
      } else
        this.options.log(
          `Partition Processor received events but has less than MinBatchSize total events. Waiting for more events (${this.#held.length} held)`,
        );
      if (!this.#wait && this.#held.length) this.#startWait();
    });
  }

  /**
   * The partition is no longer processed here (stop, ownership lost): held events are dropped, never run
   * nor checkpointed, so whoever reads the partition next reads them again from its checkpoint.
   */
  close(): Promise<void> {
    this.#closed = true;
    this.#cancelWait();
    return this.#exclusive(async () => {
      this.#held = [];
    });
  }

  #startWait() {
    const { clock, maxWaitTimeMs, checkpointedAt } = this.options;
    const now = clock.now();
    const wait = this.#ranOnce ? maxWaitTimeMs : firstWaitMs(maxWaitTimeMs, checkpointedAt, now);
    const cancel = clock.at(now + wait, () => {
      void this.#exclusive(async () => {
        if (this.#wait !== cancel || this.#closed) return;
        this.#wait = undefined;
        if (!this.#held.length) return;
        this.options.log(
          'Partition Processor has waited MaxWaitTime since last invocation and is attempting to invoke function on all held events',
        );
        await this.#runHeld();
      }).catch((error: Error) => this.options.failed(error));
    });
    // clock.at calls back at once when the wait is 0, before handing out its canceller: that call then
    // waits for its turn, after this receive, and finds `cancel` here.
    this.#wait = cancel;
  }

  #cancelWait() {
    this.#wait?.();
    this.#wait = undefined;
  }

  async #runHeld() {
    const batch = this.#held.splice(0, this.options.maxBatchSize);
    this.#ranOnce = true;
    await this.options.run(batch);
  }

  #exclusive(work: () => Promise<void>): Promise<void> {
    const turn = this.#turn.then(work);
    this.#turn = turn.catch(() => {});
    return turn;
  }
}
