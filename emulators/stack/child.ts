/**
 * A component's own process: one emulator, bundled with this module (component.ts). The launcher forks
 * it, sends `start` over IPC, and from then on relays clock moves, health checks, control actions and
 * `stop`.
 */

import { z } from 'zod';
import { saveCodeCache } from '../core/bundle.mjs';
import { StackClock } from '../core/clock.ts';
import { type Emulator, type RunningEmulator, startEmulator } from '../core/emulator.ts';
import { PortInUseError } from '../core/http.ts';
import { type FromComponent, InvalidInputError, NotFoundError, type ToComponent } from '../core/ipc.ts';

// Zod compiles a schema to a function at its first parse; a process that parses its options once, and
// little else, does better without (~20 ms of CPU a component at start).
z.config({ jitless: true });

/**
 * Output lines, written once per turn of the event loop: stdout is a pipe here, and pipe writes are
 * synchronous on Linux, so a write per line (the functions host logs two per invocation) cost a busy
 * host a sixth of its time. Flushed on every exit, so nothing a dying component said is lost.
 */
let pendingOutput = '';
const flushOutput = () => {
  if (pendingOutput) process.stdout.write(pendingOutput);
  pendingOutput = '';
};
const print = (line: string) => {
  if (!pendingOutput) setImmediate(flushOutput);
  pendingOutput += `${line}\n`;
};
process.on('exit', flushOutput);
// What was printed before a message (ready, a reply) goes out before it, as when every line was written at once.
const send = (message: FromComponent) => {
  flushOutput();
  // Once the launcher is gone there is no one to tell (a send would fail with an error event).
  if (process.connected) process.send?.(message);
};
const clock = new StackClock();
/** How often a watched component says it is alive (EmulatorContext.watch). */
const ALIVE_EVERY_MS = 1_000;
/** What the emulator's `load` gave (or is giving) for the options the launcher sent ahead of `start`. */
let loading: Promise<unknown> | undefined;
let running: RunningEmulator | undefined;
let stopping = false;

async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    await running?.stop().catch((error: Error) => console.error(`stop failed: ${error.message}`));
    send({ type: 'stopped' });
  }
  process.exit(code);
}

async function reply(id: number, work: () => Promise<unknown>) {
  try {
    send({ type: 'reply', id, ok: true, result: await work() });
  } catch (error) {
    // An input its schema refuses is the caller's mistake, said in zod's readable lines (not its JSON).
    const refused = error instanceof z.ZodError;
    send({
      type: 'reply',
      id,
      ok: false,
      message: refused ? z.prettifyError(error) : (error as Error).message,
      notFound: error instanceof NotFoundError,
      invalid: refused || error instanceof InvalidInputError,
    });
  }
}

/** Serves `emulator` in this process, as the launcher's `start` message asks. */
export function serveComponent(emulator: Emulator): void {
  process.on('message', (message: ToComponent) => void handle(emulator, message));
}

async function handle(emulator: Emulator, message: ToComponent) {
  switch (message.type) {
    case 'load':
      loading ??= (async () => emulator.load?.(emulator.options.parse(message.options)))();
      // A failure is reported by `start`, which awaits it.
      loading.catch(() => {});
      break;
    case 'start':
      try {
        if (message.emulator !== emulator.name)
          throw new Error(`this process runs ${emulator.name}, not ${message.emulator}`);
        clock.replaceShifts(message.shifts);
        running = await startEmulator(
          emulator,
          message.options,
          {
            stateDir: message.stateDir,
            tls: message.tls,
            secrets: message.secrets,
            topology: message.topology,
            clock,
            log: print,
            crash: (reason) => {
              console.error(`crashed: ${reason}`);
              void stop(1);
            },
            // The heartbeat runs on this process's event loop: one held by a stuck function sends none.
            // The first goes at once, so that a function stuck right after the start is caught too.
            changed: (what) => send({ type: 'changed', what }),
            watch: (silentLimitMs) => {
              const beat = () => send({ type: 'alive', silentForMs: silentLimitMs });
              beat();
              setInterval(beat, ALIVE_EVERY_MS).unref();
            },
          },
          loading,
        );
        send({ type: 'ready', endpoints: running.endpoints });
        saveCodeCache();
      } catch (error) {
        send({
          type: 'failed',
          message: (error as Error).message,
          portInUse: error instanceof PortInUseError ? error.port : undefined,
        });
        await stop(1);
      }
      break;
    case 'clock':
      clock.replaceShifts(message.shifts);
      await reply(message.id, async () => undefined);
      break;
    case 'health':
      await reply(message.id, async () => {
        if (!running) throw new Error('still starting');
        return running.health();
      });
      break;
    case 'action':
      await reply(message.id, async () => {
        // Its own actions only: `constructor` or `toString` of every object are none.
        const actions = running?.actions ?? {};
        if (!Object.hasOwn(actions, message.action)) throw new NotFoundError(`no action ${message.action}`);
        return (actions[message.action] as (input: unknown) => Promise<unknown>)(message.input);
      });
      break;
    case 'stop':
      await stop(0);
  }
}

/** How long a component whose launcher is gone may spend saving its state before it exits anyway. */
const ORPHAN_GRACE_MS = 800;

// The launcher went away (even by SIGKILL): never outlive it, nor hold its ports for a restart of the
// stack. The stop gets a short grace (a functions host draining connections could take minutes).
process.on('disconnect', () => {
  setTimeout(() => process.exit(1), ORPHAN_GRACE_MS).unref();
  void stop(0);
});
// A signal sent to this process alone (the components run in their own process group, out of reach
// of a terminal's Ctrl-C): stop; the launcher sees the exit and restarts it.
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
