/**
 * The policy interpreter: runs an operation's effective policy (inbound → backend → outbound, on-error
 * when something fails) over one request. Each step records its decision in the trace.
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { Api, Operation } from './artifacts.ts';
import {
  apimError,
  backendError,
  expressionFailed,
  type GatewayAnswer,
  type GatewayError,
  JWT_INVALID,
  JWT_MISSING,
  type LastError,
  quotaExceeded,
  rateLimited,
} from './errors.ts';
import { expressionContext, type Model, type Template } from './expressions.ts';
import { BackendError, callBackend, endToEnd } from './forward.ts';
import { type JwtValidator, refusalReason } from './jwt.ts';
import type { Limits } from './limits.ts';
import { period, positive, type Section, type SetValue, type Step } from './policies.ts';
import { Query } from './query.ts';
import type { Pipeline } from './scopes.ts';
import type { Caller } from './subscriptions.ts';
import type { Trace } from './trace.ts';

type Headers = Record<string, string | string[]>;

export interface GatewayResponse {
  status: number;
  headers: Headers;
  body: Readable | string;
}

/** One request on its way through the gateway. */
export interface Exchange {
  requestId: string;
  req: IncomingMessage;
  url: URL;
  /** Absent when the request matched no API (or no operation): only on-error runs then. */
  api?: Api;
  operation?: Operation;
  /** Template parameters matched in the path. */
  params: Record<string, string>;
  caller?: Caller;
  /** The request as it will be forwarded. */
  headers: Headers;
  backendBase: string;
  backendPath: string;
  query: Query;
  variables: Map<string, string>;
  /** Headers policies add to whatever answer goes out (rate-limit counts, CORS). */
  answerHeaders: Headers;
  /** The quota-by-key counters this request has counted in at once, and by how much (each counts it once). */
  quotaKeys: Map<string, number>;
  /** Bandwidth quotas this call passed, by counter: each counts the body bytes between caller and gateway once. */
  bandwidth: Map<string, (bytes: number) => void>;
  /** Counts of by-key policies that wait for the answer (increment-condition, an increment-count expression). */
  deferred: Deferred[];
  response?: GatewayResponse;
  /** What failed, for on-error's context.LastError (null to expressions before). */
  lastError?: LastError;
  trace: Trace;
}

export interface PipelineDeps {
  limits: Limits;
  validateJwt: JwtValidator;
}

/** A CORS preflight: OPTIONS naming the method it asks for (a bare OPTIONS is an ordinary request). */
export const isPreflight = (req: IncomingMessage) =>
  req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;

/** A policy ended processing with this answer (return-response, mock-response, a CORS preflight). */
class Final {
  constructor(readonly answer: GatewayAnswer) {}
}
/** A policy or the backend failed: on-error runs with this as the response and LastError. */
class Failure {
  constructor(readonly failed: GatewayError) {}
}

export async function runPipeline(
  ex: Exchange,
  pipeline: Pipeline,
  deps: PipelineDeps,
): Promise<GatewayResponse> {
  const answer = await runSections(ex, pipeline, deps);
  // Deferred increment-conditions decide with the answer known (context.Response).
  ex.response = answer;
  for (const deferred of ex.deferred) deferred.decide();
  return answer;
}

async function runSections(ex: Exchange, pipeline: Pipeline, deps: PipelineDeps): Promise<GatewayResponse> {
  try {
    await runSection(pipeline.inbound, 'inbound', ex, deps);
    await runSection(pipeline.backend, 'backend', ex, deps);
    if (!ex.response) await forward(ex, 300, 'forward-request (implicit)');
    await runSection(pipeline.outbound, 'outbound', ex, deps);
    return ex.response as GatewayResponse;
  } catch (outcome) {
    // Sections and the backend call end only so (runSection turns any other error into a Failure).
    if (outcome instanceof Final) return outcome.answer;
    return runOnError(ex, pipeline, deps, (outcome as Failure).failed);
  }
}

/**
 * An error's answer through the on-error section, which may change or replace it. Also for the gateway's
 * own refusals before the policies (APIM's SubscriptionKeyNotFound / SubscriptionKeyInvalid).
 */
export async function runOnError(
  ex: Exchange,
  pipeline: Pipeline,
  deps: PipelineDeps,
  { answer, error }: GatewayError,
): Promise<GatewayResponse> {
  ex.response = answer;
  ex.lastError = error;
  try {
    await runSection(pipeline['on-error'], 'on-error', ex, deps);
  } catch (inner) {
    // A policy failing in on-error leaves the answer as it stands (the trace tells why).
    if (inner instanceof Final) return inner.answer;
  }
  return ex.response;
}

const context = (ex: Exchange): Model =>
  expressionContext({
    method: ex.req.method ?? 'GET',
    url: ex.url,
    headers: ex.req.headers,
    ipAddress: ex.req.socket.remoteAddress ?? '',
    subscription: ex.caller && {
      id: ex.caller.subscription.name,
      name: ex.caller.subscription.displayName,
      key: ex.caller.key,
    },
    api: ex.api && { name: ex.api.name, path: ex.api.path },
    operation: ex.operation && {
      name: ex.operation.name,
      method: ex.operation.method,
      urlTemplate: ex.operation.urlTemplate,
    },
    variables: ex.variables,
    responseStatus: ex.response?.status,
    lastError: ex.lastError,
  });

function applySet(target: Headers | Query, set: SetValue, ex: Exchange): string {
  const values = set.values.map((value) => value(() => context(ex)));
  if (target instanceof Query) {
    const exists = target.has(set.name);
    if (set.action === 'delete') target.delete(set.name);
    else if (set.action === 'skip' && exists) return 'skip (present)';
    else if (set.action === 'append') for (const value of values) target.append(set.name, value);
    else target.set(set.name, values);
    return set.action;
  }
  const name = set.name.toLowerCase();
  const exists = target[name] !== undefined;
  if (set.action === 'delete') delete target[name];
  else if (set.action === 'skip' && exists) return 'skip (present)';
  else if (set.action === 'append' && exists) target[name] = [target[name] as string].flat().concat(values);
  else target[name] = values.length === 1 ? (values[0] as string) : values;
  return set.action;
}

async function runSection(steps: Step[], section: Section, ex: Exchange, deps: PipelineDeps): Promise<void> {
  for (const step of steps) {
    try {
      await runStep(step, section, ex, deps);
    } catch (outcome) {
      if (outcome instanceof Final) throw outcome;
      // Anything else a policy fails with is an expression or its value: APIM's generic 500.
      const why = (outcome as Error).message;
      if (!(outcome instanceof Failure)) ex.trace.add(`${section} ${step.policy}`, `failed: ${why}`);
      const failed =
        outcome instanceof Failure ? outcome.failed : expressionFailed(ex.requestId, step.policy, why);
      // LastError says where: the policy's scope, section and id.
      const { answer, error } = failed;
      throw new Failure({ answer, error: { ...error, scope: step.scope, section, policyId: step.id } });
    }
  }
}

async function runStep(step: Step, section: Section, ex: Exchange, deps: PipelineDeps): Promise<void> {
  const note = (message: string) => ex.trace.add(`${section} ${step.policy}`, message);
  switch (step.policy) {
    case 'rate-limit':
    case 'rate-limit-by-key':
    case 'quota':
    case 'quota-by-key': {
      const byKey = step.policy.endsWith('-by-key');
      const quota = step.policy.startsWith('quota');
      // rate-limit and quota count per subscription and, as APIM documents, apply only to calls made
      // with a subscription key.
      if (!byKey && !ex.caller) return note('no subscription: not applied');
      const subject = byKey
        ? `key ${(step.counterKey as Template)(() => context(ex))}`
        : `subscription ${ex.caller?.subscription.name}`;
      // A counter-key value has one counter wherever it is used (APIM); the others count per policy.
      const counter = byKey ? subject : `${step.counter}|${subject}`;
      // An expression's value is checked as a literal is at load; a bad one fails the call (500).
      const fail = (reason: string): never => {
        throw new Error(`${step.policy}: ${reason}`);
      };
      const evaluate = (value: Template) => value(() => context(ex));
      const calls =
        typeof step.calls === 'number' ? step.calls : positive(evaluate(step.calls), 'calls', fail);
      const periodSeconds =
        typeof step.periodSeconds === 'number'
          ? step.periodSeconds
          : period(step.policy, evaluate(step.periodSeconds), fail);
      // quota-by-key counts a request once per key value, however many of its policies use that key (APIM):
      // the first policy of the value decides. A by-key policy counts at once, or once the answer is known with
      // an increment-condition or an increment-count expression (APIM postpones those to the end of the
      // outbound pipeline).
      const once = step.policy === 'quota-by-key';
      const counted = once ? ex.quotaKeys.get(counter) : undefined;
      const deferred = once
        ? ex.deferred.find((d) => d.policy === step.policy && d.counter === counter)
        : undefined;
      const later =
        counted === undefined &&
        (deferred !== undefined ||
          step.incrementCondition !== undefined ||
          typeof step.incrementCount === 'function');
      const increment = counted !== undefined || later ? 0 : ((step.incrementCount as number) ?? 1);
      const decision = quota
        ? deps.limits.quota(
            counter,
            calls,
            periodSeconds,
            step.firstPeriodStart ?? (ex.caller as Caller).started,
            increment,
            counted ?? 0,
            step.kilobytes,
          )
        : deps.limits.slidingWindow(counter, calls, periodSeconds, increment);
      if (once && counted === undefined && !later) ex.quotaKeys.set(counter, increment);
      if (step.totalHeader) ex.answerHeaders[step.totalHeader.toLowerCase()] = String(calls);
      if (decision.allowed) {
        if (later) {
          const waiting = deferred ?? countLater(ex, counter, step, decision);
          // A bandwidth of this policy, when the first of its key value had none.
          if (decision.countBytes && !waiting.countBytes)
            holdBytes(ex, counter, waiting, decision.countBytes);
        } else if (decision.countBytes) ex.bandwidth.set(counter, decision.countBytes);
        setRemaining(ex, step, decision.remaining);
        // A bandwidth-only quota has no call limit (Infinity).
        const tally =
          calls === Infinity
            ? `a call under ${step.kilobytes} KB`
            : `call ${calls - decision.remaining + (later ? 1 : 0)} of ${calls}`;
        const when = later ? ' (counted once the answer is known)' : '';
        return note(`${subject}: ${tally} in ${periodSeconds} s, passed${when}`);
      }
      const wait = decision.retryAfterSeconds;
      const over = decision.bandwidth ? `${step.kilobytes} KB` : `${calls} calls`;
      note(`${subject}: over ${over} in ${periodSeconds} s, refused (retry in ${wait} s)`);
      if (quota) throw new Failure(quotaExceeded(step.policy, wait, decision.bandwidth));
      setRemaining(ex, step, 0);
      if (step.retryAfterVariable) ex.variables.set(step.retryAfterVariable, String(wait));
      // retry-after-header-name replaces Retry-After rather than adding to it.
      const retryAfter = (step.retryAfterHeader ?? 'Retry-After').toLowerCase();
      throw new Failure(rateLimited(step.policy, wait, { [retryAfter]: String(wait) }));
    }
    case 'rewrite-uri':
      return note(rewrite(ex, step.template, step.copyUnmatched));
    case 'set-backend-service':
      ex.backendBase = step.baseUrl(() => context(ex));
      return note(`backend ${redact(new URL(ex.backendBase))}`);
    case 'set-header':
      return note(
        `${step.name}: ${applySet(section === 'inbound' ? ex.headers : (ex.response?.headers ?? ex.answerHeaders), step, ex)}`,
      );
    case 'set-query-parameter':
      return note(`${step.name}: ${applySet(ex.query, step, ex)}`);
    case 'set-variable':
      ex.variables.set(
        step.name,
        step.value(() => context(ex)),
      );
      return note(step.name);
    case 'return-response': {
      const headers: Headers = {};
      for (const set of step.headers) applySet(headers, set, ex);
      note(`answered ${step.status}`);
      throw new Final({
        status: step.status,
        headers: headers as Record<string, string>,
        body: step.body ? step.body(() => context(ex)) : '',
      });
    }
    case 'mock-response': {
      const example = ex.operation?.examples[String(step.status)]?.[step.contentType];
      const body =
        example === undefined ? '' : typeof example === 'string' ? example : JSON.stringify(example);
      note(
        `answered ${step.status} ${step.contentType}${example === undefined ? ' (no example in the OpenAPI document)' : ' from the example'}`,
      );
      throw new Final({
        status: step.status,
        headers: body ? { 'content-type': step.contentType } : {},
        body,
      });
    }
    case 'validate-jwt': {
      const refuse = (why: string, reason: string, fallback = JWT_INVALID): never => {
        note(`refused: ${why}`);
        const message = step.failMessage ?? fallback;
        throw new Failure({
          answer: apimError(step.failStatus, message),
          error: { source: 'validate-jwt', reason, message },
        });
      };
      const raw = ex.req.headers[step.headerName.toLowerCase()];
      if (typeof raw !== 'string' || raw === '')
        return refuse(`no ${step.headerName} header`, 'TokenNotPresent', JWT_MISSING);
      const [scheme, token] = raw.includes(' ') ? raw.split(/\s+/, 2) : [undefined, raw];
      if (step.scheme && scheme?.toLowerCase() !== step.scheme.toLowerCase())
        return refuse(`not a ${step.scheme} token`, 'JwtInvalid');
      try {
        await deps.validateJwt(token as string, step);
      } catch (error) {
        return refuse((error as Error).message, refusalReason(error));
      }
      return note('token valid');
    }
    case 'cors': {
      const origin = ex.req.headers.origin;
      const preflight = isPreflight(ex.req);
      const allowed = origin !== undefined && (step.origins.includes('*') || step.origins.includes(origin));
      if (!allowed) {
        note(origin ? `origin ${origin} not allowed` : 'no Origin header');
        // An unmatched preflight ends here, bare; so does a simple cross-origin call (GET, HEAD) unless
        // terminate-unmatched-request is false (APIM's cors reference).
        const simple = origin !== undefined && ['GET', 'HEAD'].includes(ex.req.method ?? '');
        if (preflight || (simple && step.terminateUnmatched))
          throw new Final({ status: 200, headers: {}, body: '' });
        return;
      }
      const allowOrigin = step.origins.includes('*') && !step.allowCredentials ? '*' : origin;
      ex.answerHeaders['access-control-allow-origin'] = allowOrigin;
      if (step.allowCredentials) ex.answerHeaders['access-control-allow-credentials'] = 'true';
      if (step.expose.length) ex.answerHeaders['access-control-expose-headers'] = step.expose.join(',');
      if (preflight) {
        const headers: Record<string, string> = {
          'access-control-allow-methods': (step.methods.length ? step.methods : ['GET', 'POST']).join(','),
        };
        const asked = ex.req.headers['access-control-request-headers'];
        if (asked)
          headers['access-control-allow-headers'] = step.headers.includes('*')
            ? asked
            : step.headers.join(',');
        if (step.maxAge) headers['access-control-max-age'] = String(step.maxAge);
        note(`preflight from ${origin} answered`);
        throw new Final({ status: 200, headers, body: '' });
      }
      return note(`origin ${origin} allowed`);
    }
    case 'forward-request':
      return forward(ex, step.timeoutSeconds, 'forward-request');
    case 'base':
    case 'include-fragment':
      // Expanded when the artifacts were loaded; never reached.
      throw new Error(`unexpanded <${step.policy}>`);
  }
}

/** Counts body bytes between caller and gateway into every bandwidth quota the call passed (none: no counting). */
export function counter(ex: Exchange): ((bytes: number) => void) | undefined {
  if (ex.bandwidth.size === 0) return undefined;
  return (bytes) => {
    for (const count of ex.bandwidth.values()) count(bytes);
  };
}

type LimitStep = Extract<Step, { policy: 'rate-limit' | 'rate-limit-by-key' | 'quota' | 'quota-by-key' }>;

/**
 * rate-limit(-by-key)'s remaining calls, into the header and the variable they name: never below 0 (a count
 * over one may take a window past its calls).
 */
function setRemaining(ex: Exchange, step: LimitStep, remaining: number) {
  const value = String(Math.max(0, remaining));
  if (step.remainingHeader) ex.answerHeaders[step.remainingHeader.toLowerCase()] = value;
  if (step.remainingVariable) ex.variables.set(step.remainingVariable, value);
}

/** A by-key policy's count waiting for the answer; `counts` once decided. */
interface Deferred {
  policy: string;
  counter: string;
  decide: () => void;
  counts?: boolean;
  /** Body bytes that passed before the decision. */
  held: number;
  countBytes?: (bytes: number) => void;
}

/**
 * The by-key policies' increment-condition and increment-count expression: the call, and its body bytes
 * (quota-by-key's bandwidth), count only if the condition holds once the answer is known, by the count's
 * value then (APIM postpones them to the end of the outbound pipeline; the references' examples read
 * context.Response.StatusCode). A condition or count that fails, or whose value is no boolean or positive
 * whole number, leaves the call uncounted (the answer stands; the trace says why).
 */
function countLater(
  ex: Exchange,
  counter: string,
  step: LimitStep,
  decision: { countCall?: (n: number) => number; countBytes?: (bytes: number) => void },
): Deferred {
  const { incrementCondition: condition, incrementCount: count = 1 } = step;
  const fail = (reason: string): never => {
    throw new Error(reason);
  };
  let n = 0;
  const note = (message: string) => ex.trace.add(step.policy, `${counter}: ${message}`);
  const deferred: Deferred = {
    policy: step.policy,
    counter,
    held: 0,
    decide: () => {
      try {
        // .NET's bool.Parse: True or False, any case, spaces around.
        const value = condition
          ? condition(() => context(ex))
              .trim()
              .toLowerCase()
          : 'true';
        if (value !== 'true' && value !== 'false')
          throw new Error(`increment-condition is ${JSON.stringify(value)}, not a boolean`);
        if (value === 'true')
          n =
            typeof count === 'number'
              ? count
              : positive(
                  count(() => context(ex)),
                  'increment-count',
                  fail,
                );
        deferred.counts = value === 'true';
      } catch (error) {
        deferred.counts = false;
        return note(`not counted: ${(error as Error).message}`);
      }
      if (!deferred.counts) return note('not counted (increment-condition false)');
      const remaining = decision.countCall?.(n);
      // The header goes out with the answer: it tells what is left once this call is counted.
      if (remaining !== undefined) setRemaining(ex, step, remaining);
      deferred.countBytes?.(deferred.held);
      note(`counted ${n}${condition ? ' (increment-condition true)' : ''}`);
    },
  };
  ex.deferred.push(deferred);
  if (decision.countBytes) holdBytes(ex, counter, deferred, decision.countBytes);
  return deferred;
}

/** Bytes of a call whose count waits: held until the condition decides, then counted if it holds. */
function holdBytes(ex: Exchange, counter: string, deferred: Deferred, countBytes: (bytes: number) => void) {
  deferred.countBytes = countBytes;
  ex.bandwidth.set(counter, (bytes) => {
    if (deferred.counts === undefined) deferred.held += bytes;
    else if (deferred.counts) countBytes(bytes);
  });
}

/** A URL for the trace: query parameter values hidden (a function key may travel as `code`). */
const redact = (url: URL) => {
  // Most calls have no query: nothing to hide, and no copy of the URL to make.
  if (!url.search) return url.href;
  const copy = new URL(url);
  for (const name of new Set(copy.searchParams.keys())) copy.searchParams.set(name, '***');
  return copy.href;
};

function rewrite(ex: Exchange, template: string, copyUnmatched: boolean): string {
  const used = new Set<string>();
  const fill = (part: string) =>
    part.replace(/\{([^}]+)\}/g, (_whole, name: string) => {
      const value = ex.params[name] ?? ex.query.get(name);
      if (value === null || value === undefined) return '';
      used.add(name);
      return encodeURIComponent(value);
    });
  const [path = '', query = ''] = template.split('?', 2);
  // The template's parameters as written (values filled in), then the caller's unmatched ones as sent.
  const rewritten = new Query(fill(query));
  if (copyUnmatched) rewritten.appendFrom(ex.query, used);
  ex.backendPath = fill(path);
  ex.query = rewritten;
  return `path ${ex.backendPath}`;
}

async function forward(ex: Exchange, timeoutSeconds: number, source: string): Promise<void> {
  const base = ex.backendBase.replace(/\/+$/, '');
  const url = new URL(`${base}${ex.backendPath}`);
  const search = ex.query.toString();
  // For the trace only: URL's search setter re-encodes, so the request itself takes `search` as is.
  url.search = search;
  const started = performance.now();
  try {
    const response = await callBackend({
      url,
      search,
      method: ex.req.method ?? 'GET',
      headers: ex.headers,
      body: ex.req,
      timeoutMs: timeoutSeconds * 1000,
      onBodyBytes: counter(ex),
    });
    ex.trace.add(
      source,
      `${ex.req.method} ${redact(url)} → ${response.statusCode} in ${Math.round(performance.now() - started)} ms`,
    );
    ex.response = { status: response.statusCode ?? 502, headers: endToEnd(response.headers), body: response };
  } catch (error) {
    const failed =
      error instanceof BackendError ? error : new BackendError('unreachable', (error as Error).message);
    // APIM's LastError.Reason names the two failures, which answer alike.
    const reason = failed.kind === 'timeout' ? 'Timeout' : 'BackendConnectionFailure';
    ex.trace.add(
      source,
      `${ex.req.method} ${redact(url)} failed after ${Math.round(performance.now() - started)} ms: ${reason}: ${failed.message}`,
    );
    const { answer, error: lastError } = backendError(ex.requestId, failed.kind === 'timeout');
    throw new Failure({ answer, error: { ...lastError, section: 'backend' } });
  }
}
