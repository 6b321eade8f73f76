/**
 * For tests: the emulator's actions, typed, and a stand-in for the Functions host's Event Grid webhook
 * (the receiving end of deliveries), which records what arrives and answers what the test chooses.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { expect } from 'vitest';
import type { RunningEmulator } from '../core/emulator.ts';
import { close, listen } from '../core/http.ts';
import {
  startEmulator,
  type TestContext,
  testContext,
  testDataDir,
  useAppIdentityEnv,
} from '../core/testing.ts';
import identity from '../identity/index.ts';
import type { Deliverer } from './delivery.ts';
import eventgrid from './index.ts';
import type { DeadLetter } from './store.ts';

/** The suffix most of Event Grid's error messages end with (errors.ts). */
export const REPORT =
  / Report '[0-9a-f-]{36}:1:\d{1,2}\/\d{1,2}\/\d{4} \d{1,2}:\d{2}:\d{2} [AP]M \(UTC\)' to our forums for assistance or raise a support ticket\.$/;

/** Checks an error answer with the report suffix (status, code, detail code); its message without the suffix. */
export async function errorMessage(response: Response, status: number, code: string, detail: string) {
  expect(response.status).toBe(status);
  const { error } = (await response.json()) as {
    error: { code: string; message: string; details: { code: string; message: string }[] };
  };
  expect(error.code).toBe(code);
  expect(error.details).toEqual([{ code: detail, message: error.message }]);
  expect(error.message).toMatch(REPORT);
  return error.message.replace(REPORT, '');
}

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

/** The CloudEvents abuse-protection handshake (an OPTIONS request) and what the receiver answered. */
export interface Handshake {
  url: URL;
  headers: IncomingHttpHeaders;
}

export async function startReceiver() {
  const received: Received[] = [];
  const handshakes: Handshake[] = [];
  let answer: (request: Received) => number = () => 200;
  // A webhook that supports CloudEvents allows Event Grid's origin, as the spec's handshake asks.
  let allow: (request: Handshake) => Record<string, string> = (request) => ({
    'webhook-allowed-origin': String(request.headers['webhook-request-origin'] ?? ''),
  });
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://receiver');
    if (req.method === 'OPTIONS') {
      const handshake = { url, headers: req.headers };
      handshakes.push(handshake);
      return res.writeHead(200, { ...allow(handshake), 'content-length': 0 }).end();
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request = {
      url,
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
    handshakes,
    /** Sets how the receiver answers from now on. */
    answerWith(fn: (request: Received) => number) {
      answer = fn;
    },
    /** Sets the headers the receiver answers a handshake with from now on. */
    handshakeWith(fn: (request: Handshake) => Record<string, string>) {
      allow = fn;
    },
    /** What arrived for the event with this id (one-event arrays, or a CloudEvent on its own). */
    deliveriesOf(eventId: string) {
      return received.filter((r) => {
        const event = (Array.isArray(r.body) ? r.body[0] : r.body) as { id?: string } | undefined;
        return event?.id === eventId;
      });
    },
    stop: () => close(server),
  };
}

/**
 * The emulator next to the identity emulator, with the topology's topics granting EventGrid Data Sender
 * to `senders`, and @azure/identity's managed-identity environment set for `app` (one app per file:
 * MSAL caches the first identity it sees). Deliveries go to a receiver.
 */
export async function startWithIdentity(app: string, senders: string[]) {
  const data = testDataDir();
  const base = await testContext(data.dir, { inMemory: true });
  const topics = base.topology.eventGrid.topics.map((topic) => ({
    ...topic,
    roleAssignments: senders.map((sender) => ({ identity: sender, role: 'EventGrid Data Sender' as const })),
  }));
  const context: TestContext = { ...base, topology: { ...base.topology, eventGrid: { topics } } };
  const idp = await startEmulator(identity, { port: 0 }, context);
  const receiver = await startReceiver();
  const { issuer, jwksUri } = idp.endpoints;
  const running = await startEmulator(
    eventgrid,
    { port: 0, functionsBaseUrl: receiver.baseUrl, issuer, jwksUri },
    context,
  );
  const restoreEnv = useAppIdentityEnv(idp, context, app);
  return {
    context,
    running,
    receiver,
    async stop() {
      restoreEnv();
      await running.stop();
      await receiver.stop();
      await idp.stop();
      data.remove();
    },
  };
}
