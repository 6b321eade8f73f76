/**
 * What the input and output bindings (and the blob trigger) read values and paths as: the bytes of a
 * value the library converted, and a blob path's container and name. Apart, so that the binding
 * modules need not import one another for them.
 */
import type { RpcTypedData } from '../core-api.ts';

/** The bytes of a value the library converted (`toRpcTypedData`). */
export function typedDataBytes(data: RpcTypedData): Buffer {
  if (data.bytes) return Buffer.from(data.bytes);
  if (data.string !== undefined && data.string !== null) return Buffer.from(data.string);
  if (data.json !== undefined && data.json !== null) return Buffer.from(data.json);
  if (data.int !== undefined && data.int !== null) return Buffer.from(String(data.int));
  if (data.double !== undefined && data.double !== null) return Buffer.from(String(data.double));
  throw new Error('unsupported output value');
}

/** `container/path/to/blob` → its parts. */
export function splitBlobPath(path: string): { container: string; blob: string } {
  const slash = path.indexOf('/');
  if (slash <= 0 || slash === path.length - 1)
    throw new Error(`blob path "${path}" is not <container>/<blob>`);
  return { container: path.slice(0, slash), blob: path.slice(slash + 1) };
}
