import { EventEmitter } from 'node:events';

/**
 * The stack clock: real time plus an offset that only ever grows (the launcher moves it forward).
 * Every component reads time here so timers, retention and lifecycle rules can be tested without waiting.
 * The history of offsets is kept so that a real timestamp written by a store that cannot read this clock
 * (Azurite's Last-Modified) maps back to the stack time it happened at.
 */
export interface ClockShift {
  /** Real time (ms since epoch) from which `offsetMs` applies. */
  since: number;
  offsetMs: number;
}

/**
 * The latest stack time: the end of year 9999, the last instant Azure's services (.NET's DateTime) and
 * HTTP dates can express; far past it, JavaScript dates themselves become invalid.
 */
export const LATEST_STACK_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * A clock history as read from clock.json: the valid prefix of the shifts (finite, in order, offsets
 * only growing, never past the latest stack time) and, when something had to be dropped, why.
 */
export function checkShifts(input: unknown): { shifts: ClockShift[]; problem?: string } {
  if (!Array.isArray(input)) return { shifts: [], problem: 'it is not a list of clock shifts' };
  const shifts: ClockShift[] = [];
  for (const shift of input as unknown[]) {
    const { since, offsetMs } = (shift ?? {}) as Partial<ClockShift>;
    const previous = shifts.at(-1) ?? { since: 0, offsetMs: 0 };
    if (
      typeof since !== 'number' ||
      typeof offsetMs !== 'number' ||
      !(since >= previous.since && offsetMs >= previous.offsetMs) ||
      !(Math.max(since, Date.now()) + offsetMs <= LATEST_STACK_TIME)
    )
      return {
        shifts,
        problem: `shift ${shifts.length + 1} of ${input.length} is invalid: ${JSON.stringify(shift)}`,
      };
    shifts.push({ since, offsetMs });
  }
  return { shifts };
}

export class StackClock extends EventEmitter<{ change: [] }> {
  #shifts: ClockShift[];

  constructor(shifts: readonly ClockShift[] = []) {
    super();
    // Every wait on stack time listens here (a timer, a change feed's poll, a partition's retention …):
    // many listeners are the design, not a leak.
    this.setMaxListeners(0);
    this.#shifts = [...shifts];
  }

  /** Stack time in ms since the epoch. */
  now(): number {
    return Date.now() + this.offsetMs;
  }

  date(): Date {
    return new Date(this.now());
  }

  get offsetMs(): number {
    return this.#shifts.at(-1)?.offsetMs ?? 0;
  }

  get shifts(): readonly ClockShift[] {
    return this.#shifts;
  }

  /** The stack time at which something that happened at real time `realMs` happened. */
  toStackTime(realMs: number): number {
    let offset = 0;
    for (const shift of this.#shifts) {
      if (shift.since > realMs) break;
      offset = shift.offsetMs;
    }
    return realMs + offset;
  }

  /** Moves the clock forward by `ms` (never backward, never past {@link LATEST_STACK_TIME}). */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError('the stack clock only moves forward');
    if (this.now() + ms > LATEST_STACK_TIME)
      throw new RangeError(`the stack clock cannot go past ${new Date(LATEST_STACK_TIME).toISOString()}`);
    this.replaceShifts([...this.#shifts, { since: Date.now(), offsetMs: this.offsetMs + ms }]);
  }

  /** Adopts the launcher's history (child processes receive it over IPC). */
  replaceShifts(shifts: readonly ClockShift[]): void {
    this.#shifts = [...shifts];
    this.emit('change');
  }

  /**
   * Calls `fn` when stack time reaches `at`, whether real time gets there or the clock is moved.
   * Returns a function that cancels it.
   */
  at(at: number, fn: () => void): () => void {
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      const wait = at - this.now();
      if (wait <= 0) {
        cancel();
        fn();
        return;
      }
      // setTimeout cannot wait longer than ~24.8 days; re-arm in steps.
      timer = setTimeout(arm, Math.min(wait, 2 ** 31 - 1));
      timer.unref();
    };
    const cancel = () => {
      clearTimeout(timer);
      this.off('change', arm);
    };
    this.on('change', arm);
    arm();
    return cancel;
  }
}
