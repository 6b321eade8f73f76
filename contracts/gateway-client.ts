/**
 * A gateway consumer's client for TaskManagerFunctionsAPI and TaskManagerWebAPI: what the consumer pact
 * tests exercise. Every call answers `{ status, contentType, body }` so callers (and the pacts) see the
 * documented texts as they are; JSON bodies are parsed.
 */
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
    // Each call on a connection of its own: the consumer tests start a mock server per interaction, and a
    // pooled connection to an earlier one (on a port the OS handed out again) would carry the call there.
    const headers: Record<string, string> = { connection: 'close' };
    if (this.subscriptionKey !== undefined) headers[SUBSCRIPTION_HEADER] = this.subscriptionKey;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${this.gatewayUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const contentType = response.headers.get('content-type');
    const text = await response.text();
    return {
      status: response.status,
      contentType,
      body: contentType?.includes('json') ? JSON.parse(text) : text,
    };
  }
}
