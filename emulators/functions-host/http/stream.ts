/**
 * HTTP streaming (`app.setup({ enableHttpStream: true })`), as the host does it: the request is proxied,
 * unbuffered, to the app's own HTTP proxy with `x-ms-invocation-id`, the invocation carries only the
 * trigger metadata (headers, route parameters), and the response the library writes to the proxy
 * streams back to the client as it is produced.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, request, type ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { BodyTooLargeError } from '../../core/http.ts';
import type { RegisteredFunction, RpcTypedData } from '../core-api.ts';
import type { Host } from '../host.ts';
import type { BindingData } from '../invoke.ts';

const INVOCATION_HEADER = 'x-ms-invocation-id';

/** Passes a body through, failing once it grows beyond `limit` bytes. */
function limited(limit: number): Transform {
  let size = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      done(size > limit ? new BodyTooLargeError(limit) : null, chunk);
    },
  });
}

export async function serveStreaming(
  host: Host,
  fn: RegisteredFunction,
  bindingName: string,
  params: Record<string, string>,
  req: IncomingMessage,
  res: ServerResponse,
  call: { reason: string; bindingData: BindingData; limit: number },
): Promise<void> {
  if (Number(req.headers['content-length'] ?? 0) > call.limit) throw new BodyTooLargeError(call.limit);
  const invocationId = randomUUID();
  const proxy = request(new URL(req.url ?? '/', host.httpStreamUri), {
    method: req.method,
    headers: {
      ...req.headers,
      [INVOCATION_HEADER]: invocationId,
      'x-forwarded-host': req.headers.host ?? new URL(host.baseUrl).host,
      'x-forwarded-proto': 'http',
    },
  });
  // The response starts flowing to the client as soon as the function starts writing it.
  const relayed = new Promise<void>((resolve) => {
    proxy.on('response', (answer) => {
      const headers = { ...answer.headers };
      delete headers[INVOCATION_HEADER];
      res.writeHead(answer.statusCode ?? 200, headers);
      answer.pipe(res).on('finish', resolve).on('error', resolve);
    });
    proxy.on('error', () => resolve());
  });
  req
    .pipe(limited(call.limit))
    .on('error', () => proxy.destroy())
    .pipe(proxy);

  const triggerMetadata: Record<string, RpcTypedData> = { Headers: { json: JSON.stringify(req.headers) } };
  for (const [name, value] of Object.entries(params)) triggerMetadata[name] = { string: value };
  const outcome = await host.invoker.invoke(fn, {
    invocationId,
    inputData: [{ name: bindingName, data: {} }],
    triggerMetadata,
    reason: call.reason,
    bindingData: call.bindingData,
  });
  if (outcome.succeeded) return relayed;
  // The library never answers the proxy for a failed run: the client gets the host's bare 500.
  proxy.destroy();
  if (!res.headersSent) res.writeHead(500, { 'content-length': 0 }).end();
  else res.destroy();
}
