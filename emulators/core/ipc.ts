import type { TlsMaterial } from './ca.ts';
import type { ClockShift } from './clock.ts';
import type { ComponentSecrets } from './secrets.ts';
import type { Topology } from './topology.ts';

/** Messages between the launcher and a component's process (Node's IPC channel, JSON). */
export type ToComponent =
  /** Sent as soon as the process is forked: what needs only the options (see Emulator.load). */
  | { type: 'load'; options: unknown }
  | {
      type: 'start';
      /** The component's name (an app's name, or the service's). */
      name: string;
      /** The registry's emulator it runs (see emulators/registry.ts). */
      emulator: string;
      options: unknown;
      stateDir: string | undefined;
      tls: TlsMaterial;
      secrets: ComponentSecrets;
      /** The topology the launcher loaded and checked: a component does not read and check it again. */
      topology: Topology;
      shifts: ClockShift[];
    }
  | { type: 'clock'; id: number; shifts: ClockShift[] }
  | { type: 'health'; id: number }
  | { type: 'action'; id: number; action: string; input: unknown }
  | { type: 'stop' };

export type FromComponent =
  | { type: 'ready'; endpoints: Record<string, string> }
  /** Each second, from a component that asked to be watched (EmulatorContext.watch): how long it may go without another. */
  | { type: 'alive'; silentForMs: number }
  | { type: 'changed'; what: 'keys' }
  /** `portInUse`: the start failed only because another process holds that port. */
  | { type: 'failed'; message: string; portInUse?: number }
  | { type: 'reply'; id: number; ok: true; result?: unknown }
  | { type: 'reply'; id: number; ok: false; message: string; notFound?: boolean; invalid?: boolean }
  | { type: 'stopped' };

/** A component or action that does not exist: the control API answers 404 for it. */
export class NotFoundError extends Error {}

/** A running component that did not answer in time: the control API answers 504 for it. */
export class NotAnsweringError extends Error {}

/** An action's input it cannot take: the control API answers 400 for it. */
export class InvalidInputError extends Error {}
