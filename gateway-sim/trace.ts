/**
 * A request's trace: what was matched, each policy's decision, the backend call and its time. Logged
 * as one line per request, and kept (the last 100) for callers that ask with `Ocp-Apim-Trace: true`,
 * who get `Ocp-Apim-Trace-Location` pointing at it. Never holds keys or header values.
 */
export interface TraceEntry {
  source: string;
  message: string;
  elapsedMs: number;
}

export class Trace {
  readonly entries: TraceEntry[] = [];
  readonly #started = performance.now();

  constructor(
    readonly id: string,
    readonly request: string,
  ) {}

  add(source: string, message: string) {
    this.entries.push({
      source,
      message,
      elapsedMs: Math.round((performance.now() - this.#started) * 10) / 10,
    });
  }

  get elapsedMs() {
    return Math.round(performance.now() - this.#started);
  }

  line(status: number) {
    return `${this.request} → ${status} in ${this.elapsedMs} ms | ${this.entries.map((entry) => `${entry.source}: ${entry.message}`).join(' | ')}`;
  }

  toJSON() {
    return { id: this.id, request: this.request, entries: this.entries };
  }
}

/** The last traces, by id. */
export class TraceStore {
  readonly #traces = new Map<string, Trace>();
  constructor(readonly capacity = 100) {}

  keep(trace: Trace) {
    this.#traces.set(trace.id, trace);
    if (this.#traces.size > this.capacity) this.#traces.delete(this.#traces.keys().next().value as string);
  }

  get(id: string) {
    return this.#traces.get(id);
  }
}
