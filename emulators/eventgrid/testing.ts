/**
 * For tests: the emulator's actions, typed, and a stand-in for the Functions host's Event Grid webhook
 * (the receiving end of deliveries), which records what arrives and answers what the test chooses.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { RunningEmulator } from '../core/emulator.ts';
import { close, listen } from '../core/http.ts';
import type { Deliverer } from './delivery.ts';
import type { DeadLetter } from './store.ts';

/** The emulator's actions, typed as the deliverer answers them. */
export function actionsOf(running: RunningEmulator) {
  const call = async (name: string) => {
    const action = running.actions?.[name];
    if (!action) throw new Error(`the emulator has no action ${name}`);
    return action(undefined);
  };
  return {
    deliveries: async () => (await call('deliveries')) as ReturnType<Deliverer['deliveries']>,
    deadLetters: async () => (await call('deadLetters')) as DeadLetter[],
  };
}

export interface Received {
  url: URL;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export async function startReceiver() {
  const received: Received[] = [];
  let answer: (request: Received) => number = () => 200;
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request = {
      url: new URL(req.url ?? '/', 'http://receiver'),
      headers: req.headers,
      body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown,
    };
    received.push(request);
    res.writeHead(answer(request), { 'content-length': 0 }).end();
  });
  const port = await listen(server, 0);
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    received,
    /** Sets how the receiver answers from now on. */
    answerWith(fn: (request: Received) => number) {
      answer = fn;
    },
    /** What arrived for the event with this id. */
    deliveriesOf(eventId: string) {
      return received.filter((r) => Array.isArray(r.body) && (r.body as { id: string }[])[0]?.id === eventId);
    },
    stop: () => close(server),
  };
}
