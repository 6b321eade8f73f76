import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { sameKey } from '../core/compare.ts';
import { BodyTooLargeError, close, listen, readBody, reasonOf, sendJson } from '../core/http.ts';
import { InvalidInputError, NotAnsweringError, NotFoundError } from '../core/ipc.ts';
import type { Stack } from './stack.ts';

export const CONTROL_KEY_HEADER = 'x-taskstack-key';
/** How long a command waits for the control API (a clock move waits up to 5 s for each component). */
const ANSWER_WITHIN_MS = 60_000;

/** What a command reads of the control API's answer. */
export interface ControlAnswer {
  status: number;
  ok: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
}

/**
 * A call of the CLI to a running stack's control API; one that cannot reach it (the launcher stopping
 * closes it first, or is held) rejects with one line for the user. Through node:http, not fetch: V8
 * compiles fetch's WebAssembly HTTP parser (undici's llhttp) further in the background, and Node waits
 * for that before it exits, which held every command 70–200 ms after its answer.
 */
export function callControl(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
): Promise<ControlAnswer> {
  return new Promise<ControlAnswer>((resolve, reject) => {
    const request = httpRequest(url, {
      method: init.method,
      headers: init.headers,
      signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
    });
    request.on('error', reject);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = response.statusCode ?? 0;
        resolve({
          status,
          ok: status >= 200 && status < 300,
          text: async () => text,
          json: async () => JSON.parse(text),
        });
      });
    });
    request.end(init.body);
  }).catch((error) => {
    throw new Error(
      `the control API at ${new URL(url).origin} does not answer (${reasonOf(error)}): is the stack stopping?`,
    );
  });
}
const UNITS_MS = { ms: 1, seconds: 1_000, minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const;

/** `{ "days": 1, "minutes": 5 }` → milliseconds; anything else is refused. */
export function durationMs(body: unknown): number {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new TypeError('send a JSON object such as {"minutes": 5}');
  let total = 0;
  for (const [unit, value] of Object.entries(body)) {
    const factor = UNITS_MS[unit as keyof typeof UNITS_MS];
    if (!factor || typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      throw new TypeError(
        `unknown or negative duration field ${unit}; use ${Object.keys(UNITS_MS).join(', ')}`,
      );
    total += value * factor;
  }
  return total;
}

/** The operations read with GET; every other is a POST (the clock's move, component actions). */
const READS = ['/stack', '/health', '/clock'];

async function route(
  stack: Stack,
  req: IncomingMessage,
): Promise<[number, unknown] | [number, unknown, Record<string, string>]> {
  const path = new URL(req.url ?? '/', 'http://control').pathname;
  const body = req.method === 'POST' ? await readBody(req, 1024 * 1024) : undefined;
  const json = body?.length ? JSON.parse(body.toString('utf8')) : {};
  if (req.method === 'GET' && path === '/stack') return [200, stack.description];
  if (req.method === 'GET' && path === '/health') return [200, await stack.health()];
  if (req.method === 'GET' && path === '/clock')
    return [200, { now: stack.clock.date().toISOString(), offsetMs: stack.clock.offsetMs }];
  if (req.method === 'POST' && path === '/clock/advance') {
    await stack.advanceClock(durationMs(json));
    return [200, { now: stack.clock.date().toISOString(), offsetMs: stack.clock.offsetMs }];
  }
  const action = /^\/components\/([\w-]+)\/([\w-]+)$/.exec(path);
  if (req.method === 'POST' && action)
    return [200, (await stack.action(action[1] as string, action[2] as string, json)) ?? null];
  // A known operation by another method: which one it takes (HTTP's 405 with Allow), not "no such".
  const allowed = READS.includes(path) ? 'GET' : path === '/clock/advance' || action ? 'POST' : undefined;
  if (allowed) return [405, { error: `${path} takes ${allowed}, not ${req.method}` }, { allow: allowed }];
  return [404, { error: `no control operation ${req.method} ${path}` }];
}

/**
 * The launcher's control API (loopback only, master key required): the stack description, health,
 * the stack clock, and component actions. The CLI and tests use it; `start()` offers the same in-process.
 */
export async function startControlServer(port: number, stack: Stack) {
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (!sameKey(req.headers[CONTROL_KEY_HEADER] as string | undefined, stack.description.masterKey)) {
      sendJson(res, 401, { error: `send the stack's master key in ${CONTROL_KEY_HEADER}` });
      return;
    }
    try {
      const [status, body, headers] = await route(stack, req);
      sendJson(res, status, body, headers);
    } catch (error) {
      const status =
        error instanceof NotFoundError
          ? 404
          : error instanceof NotAnsweringError
            ? 504
            : error instanceof BodyTooLargeError
              ? 413
              : error instanceof SyntaxError ||
                  error instanceof TypeError ||
                  error instanceof RangeError ||
                  error instanceof InvalidInputError
                ? 400
                : 500;
      sendJson(res, status, { error: (error as Error).message });
    }
  });
  await listen(server, port);
  return { close: () => close(server) };
}
