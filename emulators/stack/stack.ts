/** The running stack, as the launcher's `start` returns it and the control API serves it. */
import type { StackClock } from '../core/clock.ts';
import type { StackDescription } from './stackfile.ts';

export interface Stack {
  description: StackDescription;
  clock: StackClock;
  /** Moves the stack clock forward for every component; resolves once all have it. */
  advanceClock(ms: number): Promise<void>;
  /** Invokes a component's control action (e.g. `blob` / `runLifecycle`). */
  action(component: string, action: string, input?: unknown): Promise<unknown>;
  /** The process id of each component (they change when a crashed component is restarted). */
  pids(): Record<string, number | undefined>;
  /** Each component's health: `ok` or the reason it is not. */
  health(): Promise<Record<string, string>>;
  /** Stops one component; it stays down (no restart) until `startComponent`. */
  stopComponent(name: string): Promise<void>;
  /** Starts a component stopped by `stopComponent`, on the same ports and data; resolves once healthy. */
  startComponent(name: string): Promise<void>;
  stop(): Promise<void>;
}
