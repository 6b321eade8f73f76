/**
 * Runs `step` once for every item, each as soon as the steps of the items it waits for are done
 * (independent items run at once). Rejects with the first failure.
 */
export function inOrder<T>(
  items: T[],
  waitsFor: (item: T) => T[],
  step: (item: T) => Promise<void>,
): Promise<void> {
  const done = new Map<T, Promise<void>>();
  const run = (item: T): Promise<void> => {
    let promise = done.get(item);
    if (!promise) {
      promise = Promise.all(waitsFor(item).map(run)).then(() => step(item));
      done.set(item, promise);
    }
    return promise;
  };
  return Promise.all(items.map(run)).then(() => undefined);
}

/** The items that wait for a given one: the order to stop them in is the other way round (inOrder). */
export const dependentsOf =
  <T>(items: T[], waitsFor: (item: T) => T[]) =>
  (item: T): T[] =>
    items.filter((other) => waitsFor(other).includes(item));

/** Runs `stop` for every item, each once those that wait for it have stopped. */
export const stopInOrder = <T>(items: T[], waitsFor: (item: T) => T[], stop: (item: T) => Promise<void>) =>
  inOrder(items, dependentsOf(items, waitsFor), stop);

/** What `startInOrder` does with each item. */
export interface StartSteps<T> {
  /** What comes before the launch proper (a build, releasing its ports); may take a while. */
  prepare(item: T): Promise<void>;
  /** The launch proper: from here on the item runs (a process is forked) until `stop`. */
  launch(item: T): Promise<void>;
  stop(item: T): Promise<void>;
}

/** What a start stopped by its caller (a Ctrl-C while the stack starts) rejects with. */
export class StartInterrupted extends Error {
  constructor() {
    super('the start was interrupted');
  }
}

/**
 * Starts every item as soon as those it waits for have started (inOrder). On the first failure, or
 * once `signal` aborts, nothing more is launched: an item whose prerequisites come up after it, while
 * the others are being stopped, would otherwise run on with no one to stop it. Then every item is
 * stopped, dependents first (a launch under way is stopped too), and the failure thrown.
 */
export async function startInOrder<T>(
  items: T[],
  waitsFor: (item: T) => T[],
  steps: StartSteps<T>,
  signal?: AbortSignal,
): Promise<void> {
  let failed = false;
  const started = inOrder(items, waitsFor, async (item) => {
    await steps.prepare(item);
    if (failed) throw new Error('the start failed meanwhile');
    await steps.launch(item);
  });
  // Once interrupted, the launches under way end as their items are stopped: their failures are not news.
  started.catch(() => {});
  let interrupted: (() => void) | undefined;
  try {
    await Promise.race([
      started,
      new Promise<never>((_, reject) => {
        interrupted = () => reject(new StartInterrupted());
        if (signal?.aborted) interrupted();
        signal?.addEventListener('abort', interrupted, { once: true });
      }),
    ]);
  } catch (error) {
    failed = true;
    await stopInOrder(items, waitsFor, steps.stop);
    throw error;
  } finally {
    if (interrupted) signal?.removeEventListener('abort', interrupted);
  }
}
