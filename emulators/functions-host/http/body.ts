/**
 * Request bodies read no further than needed. An app whose local.settings.json declares
 * `Host.MaxRequestBodySize` promises that none of its functions accepts a larger body; the host then
 * reads at most that + 1 byte and hands the function what it read, so the function itself answers
 * (its own 413 and text, exactly as in Azure, where the host reads up to 100 MB first), and an
 * oversized upload never costs more memory than the limit, however large it is or however many come.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** How long a connection whose body was left unread stays open for the client to read the answer. */
const LINGER_MS = 10_000;

/** Up to `max` bytes of the body; `cut` when the body went on (the rest is left unread, the stream paused). */
export function readAtMost(req: IncomingMessage, max: number): Promise<{ body: Buffer; cut: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (cut: boolean) => {
      req.off('data', onData).off('end', onEnd).off('error', onError);
      if (cut) req.pause();
      resolve({ body: Buffer.concat(chunks).subarray(0, max), cut });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > max) finish(true);
    };
    const onEnd = () => finish(false);
    // Also a client gone before the end of its body (Node reports it as an `aborted` error).
    const onError = (error: Error) => {
      req.off('data', onData).off('end', onEnd);
      reject(error);
    };
    req.on('data', onData).on('end', onEnd).on('error', onError);
  });
}

/**
 * Closes the connection once the answer is out, without reading the rest of the body: a FIN says no
 * more is coming, and the socket stays open, unread, for a while. Closing a socket that has unread
 * input sends a reset, which can destroy an answer the client has not read yet.
 */
export function closeAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  res.once('finish', () => {
    const socket = req.socket;
    socket.end();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
    socket.once('close', () => clearTimeout(timer));
  });
}
