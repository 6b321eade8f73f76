import type { z } from 'zod';
import type { TlsMaterial } from './ca.ts';
import type { StackClock } from './clock.ts';
import type { ComponentSecrets } from './secrets.ts';
import type { Topology } from './topology.ts';

/**
 * What every emulated service is given at start. Everything here is shared by the whole stack;
 * what is particular to one service travels in its options.
 */
export interface EmulatorContext {
  /** Folder for the service's persisted state, or undefined in in-memory mode (nothing persisted). */
  stateDir: string | undefined;
  tls: TlsMaterial;
  clock: StackClock;
  topology: Topology;
  secrets: ComponentSecrets;
  /** A line for the service's log (the launcher prefixes, colours and files it). */
  log(message: string): void;
  /** The service can no longer serve (e.g. a process it depends on died): its process exits, the launcher restarts it. */
  crash(reason: string): void;
  /**
   * Asks whoever runs the service to end and restart it once its event loop has stopped turning for
   * longer than `silentLimitMs`. The functions host gives functionTimeout and its grace, so a function
   * stuck in an endless loop ends its worker, as Azure's host restarts a worker stuck past the timeout.
   * Absent where nothing watches.
   */
  watch?(silentLimitMs: number): void;
  /**
   * Tells whoever runs the service that something stack.json names of it changed from within (the
   * functions host's keys, set through its admin API), so that it reads them again. Absent where nothing
   * listens.
   */
  changed?(what: 'keys'): void;
}

/** A started service. */
export interface RunningEmulator {
  /** Named addresses the service answers on (e.g. `{ blob: 'http://127.0.0.1:10000/devstoreaccount1' }`). */
  endpoints: Record<string, string>;
  /** Resolves when the service answers on the wire; rejects with the reason otherwise. */
  health(): Promise<void>;
  stop(): Promise<void>;
  /** Operations the launcher's control API may invoke (`POST /components/<name>/<action>`). */
  actions?: Record<string, (input: unknown) => Promise<unknown>>;
}

/**
 * One emulated service: a name, an options schema checked at start, and `start`. Each lives in
 * `emulators/<name>/index.ts` as its default export and is listed once in `emulators/registry.ts`.
 */
export interface Emulator<Schema extends z.ZodType = z.ZodType, Loaded = unknown> {
  name: string;
  options: Schema;
  /**
   * Work that needs the options alone, not the services the component uses (the functions host imports
   * its app): the launcher asks for it as soon as the process is forked, so it is done while those
   * services start. Its result is given to `start`.
   */
  load?(options: z.output<Schema>): Promise<Loaded>;
  start(options: z.output<Schema>, context: EmulatorContext, loaded: Loaded): Promise<RunningEmulator>;
}

/**
 * Starts `emulator` with checked options, after its `load`: the one `loading` asked for ahead, else
 * now (a process forked to restart, a test, a container).
 */
export async function startEmulator(
  emulator: Emulator,
  options: unknown,
  context: EmulatorContext,
  loading?: Promise<unknown>,
): Promise<RunningEmulator> {
  const parsed = emulator.options.parse(options);
  return emulator.start(parsed, context, await (loading ?? emulator.load?.(parsed)));
}

export function defineEmulator<Schema extends z.ZodType, Loaded = undefined>(
  emulator: Emulator<Schema, Loaded>,
): Emulator<Schema, Loaded> {
  return emulator;
}
