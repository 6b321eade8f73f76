/**
 * The gateway's HTTP surface: APIM's health probe, traces, and every API call — matched by URL suffix,
 * then operation (method + URL template), the subscription key checked, then the operation's policy run.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Api, GatewayConfig, Operation } from './artifacts.ts';
import { discardBody } from './continue.ts';
import {
  type GatewayAnswer,
  type GatewayError,
  INVALID_KEY,
  keyRefused,
  MISSING_KEY,
  newRequestId,
  notFound,
} from './errors.ts';
import { endToEnd } from './forward.ts';
import {
  counter,
  type Exchange,
  type GatewayResponse,
  isPreflight,
  type PipelineDeps,
  runOnError,
  runPipeline,
} from './pipeline.ts';
import { Query } from './query.ts';
import type { Pipeline } from './scopes.ts';
import type { Caller, SubscriptionRegistry } from './subscriptions.ts';
import { Trace, type TraceStore } from './trace.ts';

/** APIM's own health endpoint. */
export const HEALTH_PATH = '/status-0123456789abcdef';

export interface RoutesOptions extends PipelineDeps {
  origin: string;
  config: () => GatewayConfig;
  subscriptions: SubscriptionRegistry;
  traces: TraceStore;
  log: (line: string) => void;
}

/**
 * The path with each escaped unreserved character (RFC 3986 §2.3: letters, digits, `-._~`) decoded: the
 * same URI by §6.2.2.2, as .NET's Uri (APIM's gateway) reads it. Other escapes (`%2F`, `%20`) stay.
 */
const decodeUnreserved = (path: string) =>
  path.replace(/%([0-9A-Fa-f]{2})/g, (encoded, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return /[\w.~-]/.test(char) ? char : encoded;
  });

function matchApi(config: GatewayConfig, path: string): { api: Api; rest: string } | undefined {
  let best: { api: Api; rest: string } | undefined;
  const lower = path.toLowerCase();
  for (const api of config.apis) {
    const prefix = api.path ? `/${api.path.toLowerCase()}` : '';
    if (lower === prefix || lower.startsWith(`${prefix}/`))
      if (!best || api.path.length > best.api.path.length)
        best = { api, rest: path.slice(prefix.length) || '/' };
  }
  return best;
}

function matchOperation(api: Api, method: string, rest: string, preflight: boolean) {
  let samePath: Operation | undefined;
  for (const operation of api.operations) {
    const match = operation.pattern.exec(rest);
    if (!match) continue;
    const params = Object.fromEntries(
      Object.entries(match.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)]),
    );
    if (operation.method === method) return { operation, params };
    samePath ??= operation;
  }
  // A CORS preflight names the method it will use; the cors policy of that path answers it.
  return samePath && preflight ? { operation: samePath, params: {} } : undefined;
}

/** Sends the answer; `counted` is told of its body bytes before they go out (bandwidth quotas). */
async function send(
  res: ServerResponse,
  response: GatewayResponse | GatewayAnswer,
  extra: Record<string, string | string[]>,
  counted?: (bytes: number) => void,
) {
  const headers = { ...response.headers, ...extra };
  if (typeof response.body === 'string') {
    const length = Buffer.byteLength(response.body);
    counted?.(length);
    headers['content-length'] = String(length);
    res.writeHead(response.status, headers).end(response.body);
    return;
  }
  res.writeHead(response.status, headers);
  const body = response.body;
  await new Promise<void>((resolve) => {
    body.on('error', () => {
      res.destroy();
      resolve();
    });
    res.on('close', () => {
      // A caller that left: the rest of the backend's answer is not wanted.
      if (!body.readableEnded) body.destroy();
      resolve();
    });
    if (counted) body.on('data', (chunk: Buffer) => counted(chunk.length));
    body.pipe(res);
  });
}

export function gatewayHandler(options: RoutesOptions) {
  const { origin, subscriptions, traces, log } = options;

  // The key stays in the request (header or query) and reaches the backend, as with APIM, unless a
  // policy removes it.
  function checkKey(api: Api, key: string | null, trace: Trace): { refusal?: GatewayError; caller?: Caller } {
    const refuse = (message: string) => ({
      refusal: keyRefused(message, `${origin}/${api.path}`, api.keyHeader),
    });
    if (!key) {
      trace.add('subscription', 'no key');
      return refuse(MISSING_KEY);
    }
    const caller: Caller | undefined = subscriptions.find(key, options.config().subscriptions);
    if (!caller) {
      trace.add('subscription', 'unknown key');
      return refuse(INVALID_KEY);
    }
    const state = subscriptions.state(caller.subscription);
    if (state !== 'active') {
      trace.add('subscription', `${caller.subscription.name} is ${state}`);
      return refuse(INVALID_KEY);
    }
    if (!caller.subscription.apis.has(api.name)) {
      trace.add(
        'subscription',
        `${caller.subscription.name} (scope ${caller.subscription.scope}) does not cover ${api.displayName}`,
      );
      return refuse(INVALID_KEY);
    }
    trace.add(
      'subscription',
      `${caller.subscription.name} (${caller.slot} key, scope ${caller.subscription.scope})`,
    );
    return { caller };
  }

  /** `url`: the request's target, already parsed (index.ts refuses one that is no URL). */
  return async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    if (url.pathname === HEALTH_PATH) return res.writeHead(200, { 'content-length': 0 }).end();
    const traceId = /^\/trace\/([\w-]+)$/.exec(url.pathname)?.[1];
    if (traceId && req.method === 'GET') {
      const trace = traces.get(traceId);
      const body = trace
        ? JSON.stringify(trace, null, 2)
        : JSON.stringify({ statusCode: 404, message: 'Trace not found' });
      return res.writeHead(trace ? 200 : 404, { 'content-type': 'application/json' }).end(body);
    }

    const requestId = newRequestId();
    const trace = new Trace(requestId, `${req.method} ${url.pathname}`);
    const wantsTrace = String(req.headers['ocp-apim-trace'] ?? '').toLowerCase() === 'true';
    const extra: Record<string, string> = wantsTrace
      ? { 'ocp-apim-trace-location': `${origin}/trace/${requestId}` }
      : {};
    const finish = async (
      response: GatewayResponse | GatewayAnswer,
      more: Record<string, string | string[]> = {},
    ) => {
      log(trace.line(response.status));
      // Only a trace asked for can be read (its id is in Ocp-Apim-Trace-Location alone). Kept for every
      // call, the last 100 outlived V8's young generation under load and filled the old one (README).
      if (wantsTrace) traces.keep(trace);
      discardBody(req, res);
      await send(res, response, { ...more, ...extra }, counter(exchange));
    };

    const config = options.config();
    const path = decodeUnreserved(url.pathname);
    const matchedApi = matchApi(config, path);
    const matched =
      matchedApi && matchOperation(matchedApi.api, req.method ?? 'GET', matchedApi.rest, isPreflight(req));
    const headers = endToEnd(req.headers);
    const forwardedFor = req.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = [forwardedFor, req.socket.remoteAddress].filter(Boolean).join(', ');
    delete headers['ocp-apim-trace'];
    const exchange: Exchange = {
      requestId,
      req,
      url,
      api: matchedApi?.api,
      operation: matched?.operation,
      params: matched?.params ?? {},
      headers,
      backendBase: matchedApi?.api.serviceUrl ?? '',
      backendPath: matchedApi?.rest ?? path,
      query: Query.ofTarget(req.url ?? ''),
      variables: new Map<string, string>(),
      answerHeaders: {},
      quotaKeys: new Map(),
      bandwidth: new Map(),
      deferred: [],
      trace,
    };
    // APIM's own errors (OperationNotFound, SubscriptionKeyNotFound / Invalid) go through on-error too,
    // of the scopes known at that point.
    const fail = async (failed: GatewayError, scopes: Pipeline) =>
      finish(await runOnError(exchange, scopes, options, failed), exchange.answerHeaders);
    if (!matchedApi || !matched) {
      trace.add(
        'routing',
        matchedApi ? `no operation of ${matchedApi.api.displayName} matches` : 'no API matches',
      );
      return fail(notFound(), matchedApi?.api.pipeline ?? config.pipeline);
    }
    const { api } = matchedApi;
    const { operation } = matched;
    trace.add('routing', `API ${api.displayName}, operation ${operation.displayName} (${operation.name})`);
    const preflight = isPreflight(req) && operation.method !== 'OPTIONS';
    // The query parameter counts only without the header (APIM's "Use a subscription key").
    const fromHeader = req.headers[api.keyHeader.toLowerCase()];
    const key = typeof fromHeader === 'string' ? fromHeader : url.searchParams.get(api.keyQuery);
    // An open product (subscriptionRequired false) takes the API's calls without a valid key, in its own
    // context; APIM allows an API at most one.
    const openProduct = config.products.find((p) => !p.subscriptionRequired && p.apis.includes(api.name));
    // An API that requires no subscription ignores a key that is sent: the call is "treated the same as a
    // request without a subscription key" (APIM's subscriptions article).
    if (!preflight && key && !api.subscriptionRequired)
      trace.add('subscription', 'key ignored: the API requires no subscription');
    else if (!preflight && api.subscriptionRequired && (key || !openProduct)) {
      const checked = checkKey(api, key, trace);
      if (checked.refusal && openProduct)
        trace.add('subscription', `ignored: open product ${openProduct.name}`);
      // No product scope: the caller has no valid subscription.
      else if (checked.refusal) return fail(checked.refusal, operation.pipelines.get('') as Pipeline);
      exchange.caller = checked.caller;
    }
    const product = exchange.caller ? exchange.caller.subscription.product : openProduct?.name;
    const pipeline = (operation.pipelines.get(product ?? '') ?? operation.pipelines.get('')) as Pipeline;
    if (!preflight) return finish(await runPipeline(exchange, pipeline, options), exchange.answerHeaders);
    // Only a cors policy answers a preflight; without one the operation does not exist for OPTIONS.
    const cors = pipeline.inbound.find((step) => step.policy === 'cors');
    if (!cors) {
      trace.add('routing', 'a CORS preflight, and no cors policy applies');
      return fail(notFound(), api.pipeline);
    }
    // APIM evaluates only the cors policy on a preflight; the others apply to the call it approves.
    const corsOnly = { ...pipeline, inbound: [cors] };
    return finish(await runPipeline(exchange, corsOnly, options), exchange.answerHeaders);
  };
}
