/** Helpers for the gateway's tests: a copy of the artifacts to edit, backends, a started gateway. */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EmulatorContext, RunningEmulator } from '../emulators/core/emulator.ts';
import { close, LOOPBACK, listen } from '../emulators/core/http.ts';
import { startEmulator, testContext, testDataDir } from '../emulators/core/testing.ts';
import gateway from './index.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A copy of system/gateway and the gateway's OpenAPI documents, laid out as in the repository. */
export function copyArtifacts(root: string): string {
  const dir = join(root, 'repo', 'system', 'gateway');
  cpSync(join(ROOT, 'system', 'gateway'), dir, { recursive: true });
  mkdirSync(join(root, 'repo', 'openapi'), { recursive: true });
  for (const name of ['gateway-functions.json', 'gateway-web.json'])
    cpSync(join(ROOT, 'openapi', name), join(root, 'repo', 'openapi', name));
  return dir;
}

/** Rewrites one artifact file of a copy. */
export function editArtifact(dir: string, path: string, edit: (text: string) => string) {
  const file = join(dir, path);
  writeFileSync(file, edit(readFileSync(file, 'utf8')));
}

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** A plain HTTP backend that records each request and answers with `answer` (default: echo). */
export async function startBackend(answer?: (req: SeenRequest, res: ServerResponse) => void) {
  const seen: SeenRequest[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      return; // the gateway ended the call mid-body (its caller left)
    }
    const request = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks),
    };
    seen.push(request);
    if (answer) return answer(request, res);
    res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/octet-stream' });
    res.end(request.body);
  });
  const port = await listen(server, 0);
  return { url: `http://${LOOPBACK}:${port}`, seen, server, close: () => close(server) };
}

const definedOnly = (values: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined));

export interface TestGateway {
  url: string;
  gateway: RunningEmulator;
  context: EmulatorContext;
  logs: string[];
  dir: string;
  /** Primary and secondary keys of a subscription of the artifacts. */
  keys(subscription: string): Promise<{ primaryKey: string; secondaryKey: string }>;
  stop(): Promise<void>;
}

/** Starts the gateway in this process on a copy of the artifacts (edited by `prepare`, if given). */
export async function startGateway(options: {
  functionApp: string;
  webApp: string;
  namedValues?: Record<string, string | undefined>;
  prepare?: (dir: string) => void;
  context?: EmulatorContext;
  /** A port chosen beforehand (a redirect URI registered at the provider names it); default any. */
  port?: number;
  /** The developer portal's sign-in; without it, no portal. */
  portal?: { authority: string; clientId: string; clientSecret: string };
}): Promise<TestGateway> {
  const data = testDataDir();
  // A refused start (the refusal tests make many) leaves no data directory behind.
  try {
    const dir = copyArtifacts(data.dir);
    options.prepare?.(dir);
    const context = options.context ?? (await testContext(data.dir, { inMemory: true }));
    const logs: string[] = [];
    context.log = (line) => logs.push(line);
    const running = await startEmulator(
      gateway,
      {
        port: options.port ?? 0,
        artifactsDir: dir,
        portal: options.portal,
        // A value given as undefined leaves that named value without one.
        namedValues: definedOnly({
          FunctionAppBaseUrl: options.functionApp,
          WebAppBaseUrl: options.webApp,
          FunctionKey: context.secrets.functionKey,
          AuthUrl: 'https://127.0.0.1:1',
          TenantId: context.secrets.tenantId,
          EntraClientId: '00000000-0000-0000-0000-0000000000c1',
          EntraClientSecret: 'not-a-real-secret',
          ...options.namedValues,
        }),
      },
      context,
    );
    return {
      url: running.endpoints.gatewayUrl as string,
      gateway: running,
      context,
      logs,
      dir,
      async keys(name) {
        const list = (await running.actions?.subscriptions?.(undefined)) as {
          name: string;
          primaryKey: string;
          secondaryKey: string;
        }[];
        const found = list.find((subscription) => subscription.name === name);
        if (!found) throw new Error(`no subscription ${name}`);
        return found;
      },
      async stop() {
        await running.stop();
        data.remove();
      },
    };
  } catch (error) {
    data.remove();
    throw error;
  }
}
