/**
 * `Expect: 100-continue`: APIM runs on .NET servers, which send 100 Continue only when the application
 * starts reading the body. So a call refused before that (no key, a rate limit) is answered at once and
 * the client need not upload; Node would otherwise answer 100 Continue itself, before any check.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Requests that expect 100 Continue and whose body nobody has asked for yet. */
const waiting = new WeakSet<IncomingMessage>();

/** For the server's `checkContinue` event: 100 Continue goes out when the body is first consumed. */
export function continueOnRead(req: IncomingMessage, res: ServerResponse) {
  waiting.add(req);
  req.once('resume', () => {
    if (waiting.delete(req)) res.writeContinue();
  });
}

/**
 * A body the gateway will not read (refusals, policy answers). Drained, so the connection stays usable;
 * one the client still withholds (no 100 Continue was sent) is not asked for: the connection closes after
 * the answer, as the next bytes on it would be that body.
 */
export function discardBody(req: IncomingMessage, res: ServerResponse) {
  if (req.readableEnded) return;
  if (waiting.delete(req)) res.shouldKeepAlive = false;
  else req.resume();
}
