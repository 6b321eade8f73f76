/**
 * A gateway consumer's client for TaskManagerFunctionsAPI and TaskManagerWebAPI: what the consumer pact
 * tests exercise. Every call answers `{ status, contentType, body }` so callers (and the pacts) see the
 * documented texts as they are; JSON bodies are parsed.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { paths as GatewayFunctionsPaths } from '../openapi/types/gateway-functions.ts';
import type { paths as GatewayWebPaths } from '../openapi/types/gateway-web.ts';

export const SUBSCRIPTION_HEADER = 'Ocp-Gateway-Subscription-Key';

export interface GatewayAnswer<T = unknown> {
  status: number;
  contentType: string | null;
  body: T | string;
}

/** The request bodies, as the gateway documents describe them (all optional here: the 400 cases omit Title). */
export type NewTask = Partial<
  GatewayFunctionsPaths['/managetask']['post']['requestBody']['content']['application/json']
>;
export type NewWebTask = Partial<
  GatewayWebPaths['/api/tasks']['post']['requestBody']['content']['application/json']
>;

export class GatewayClient {
  constructor(
    private readonly gatewayUrl: string,
    /** undefined sends no key (the 401 case). */
    private readonly subscriptionKey: string | undefined,
  ) {}

  /** POST /functions/managetask */
  createTask(task: NewTask) {
    return this.call('POST', '/functions/managetask', task);
  }

  /** GET /functions/managetask?taskId= — an operation the gateway does not publish (the 404 case). */
  readTask(taskId: string) {
    return this.call('GET', `/functions/managetask?${new URLSearchParams({ taskId })}`);
  }

  /** GET /web/api/tasks */
  listWebTasks() {
    return this.call('GET', '/web/api/tasks');
  }

  /** POST /web/api/tasks */
  createWebTask(task: NewWebTask) {
    return this.call('POST', '/web/api/tasks', task);
  }

  private async call(method: string, path: string, body?: unknown): Promise<GatewayAnswer> {
    // Each call on a connection of its own (no agent, so no pool): the consumer tests start a mock server
    // per interaction, and a connection pooled earlier in this process to a server since gone (on a port
    // the OS handed out again) would carry the call there. fetch's pool is the process's, shared with
    // every other test file the process runs.
    const headers: Record<string, string> = {};
    if (this.subscriptionKey !== undefined) headers[SUBSCRIPTION_HEADER] = this.subscriptionKey;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const url = new URL(`${this.gatewayUrl}${path}`);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const { status, contentType, text } = await new Promise<{
      status: number;
      contentType: string | null;
      text: string;
    }>((resolve, reject) => {
      const req = send(url, { method, headers, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'] ?? null, text }),
        );
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
    return {
      status,
      contentType,
      body: contentType?.includes('json') ? JSON.parse(text) : text,
    };
  }
}
