/**
 * A value made once per process and shared by every invocation (clients, secrets), as Azure keeps a
 * worker alive between invocations. A failure is not kept: the next invocation tries again, so a
 * vault that starts granting access later is picked up without a restart.
 */
export function once<T>(make: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= make().catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}
