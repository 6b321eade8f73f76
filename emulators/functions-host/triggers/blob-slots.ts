/**
 * How many blobs run at once, host-wide: the extension's one shared blob trigger queue is read with
 * `extensions.blobs.maxDegreeOfParallelism` messages under way, whichever function they are for.
 */
import type { Host } from '../host.ts';

/** A freed slot goes to the listeners in turn, so that one busy container does not starve another. */
class RunSlots {
  #free: number;
  readonly #pumps = new Set<() => void>();

  constructor(size: number) {
    this.#free = size;
  }

  take(): boolean {
    if (this.#free === 0) return false;
    this.#free--;
    return true;
  }

  release(): void {
    this.#free++;
    for (const pump of [...this.#pumps]) {
      if (this.#free === 0) return;
      // Last in line next time.
      this.#pumps.delete(pump);
      this.#pumps.add(pump);
      pump();
    }
  }

  /** `pump` is called when a slot is freed, until `leave`. */
  join(pump: () => void): void {
    this.#pumps.add(pump);
  }

  leave(pump: () => void): void {
    this.#pumps.delete(pump);
  }
}

const slotsOfHost = new WeakMap<Host, RunSlots>();
/** The host's slots, shared by its blob triggers. */
export function runSlots(host: Host): RunSlots {
  let slots = slotsOfHost.get(host);
  if (!slots) {
    slots = new RunSlots(host.config.blobs.maxDegreeOfParallelism);
    slotsOfHost.set(host, slots);
  }
  return slots;
}
