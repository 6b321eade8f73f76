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
