/**
 * Policy documents → steps. Every element and attribute is checked here, once, when the artifacts are
 * loaded: anything unsupported or malformed is an ArtifactError naming file, line and policy; nothing
 * reaches the request path unchecked, and nothing is silently ignored.
 */

import { ArtifactError } from './errors.ts';
import { compileValue, ExpressionError, type Template } from './expressions.ts';
import type { XmlElement } from './xml.ts';

export const SECTIONS = ['inbound', 'backend', 'outbound', 'on-error'] as const;
export type Section = (typeof SECTIONS)[number];

interface At {
  file: string;
  line: number;
  /** For LastError: the kind of scope the policy sits in (global, product, api, operation), its `id`. */
  scope: string;
  id?: string;
}

/** A number attribute, or (where APIM allows it) an expression whose value each call checks. */
export type Amount = number | Template;

export type ExistsAction = 'override' | 'skip' | 'append' | 'delete';
export interface SetValue {
  name: string;
  action: ExistsAction;
  values: Template[];
}

export type Step = At &
  (
    | { policy: 'base' }
    | { policy: 'include-fragment'; fragment: string }
    | {
        policy: 'rate-limit' | 'rate-limit-by-key' | 'quota' | 'quota-by-key';
        /** Which counter: the scope the policy sits in and its position there. */
        counter: string;
        calls: Amount;
        periodSeconds: Amount;
        counterKey?: Template;
        remainingHeader?: string;
        totalHeader?: string;
        retryAfterHeader?: string;
        /** rate-limit(-by-key): variables given the calls left, and (refused) the wait in seconds. */
        remainingVariable?: string;
        retryAfterVariable?: string;
        /** quota-by-key's first-period-start (ms since the epoch): where its periods are laid from. */
        firstPeriodStart?: number;
        /** quota(-by-key)'s bandwidth: kilobytes of request and response bodies per period (calls is then Infinity when absent). */
        kilobytes?: number;
        /** The by-key policies' increment-condition: whether the call counts, decided once its answer is known. */
        incrementCondition?: Template;
        /** The by-key policies' increment-count: how much a call counts (an expression: decided once its answer is known). */
        incrementCount?: Amount;
      }
    | { policy: 'rewrite-uri'; template: string; copyUnmatched: boolean }
    | { policy: 'set-backend-service'; baseUrl: Template }
    | ({ policy: 'set-header' | 'set-query-parameter' } & SetValue)
    | { policy: 'set-variable'; name: string; value: Template }
    | { policy: 'return-response'; status: number; reason?: string; headers: SetValue[]; body?: Template }
    | { policy: 'mock-response'; status: number; contentType: string }
    | {
        policy: 'validate-jwt';
        headerName: string;
        scheme?: string;
        failStatus: number;
        /** failed-validation-error-message; without it APIM words each refusal itself. */
        failMessage?: string;
        openIdConfigUrls: string[];
        audiences: string[];
        issuers: string[];
      }
    | {
        policy: 'cors';
        allowCredentials: boolean;
        /** A GET or HEAD from an origin not allowed ends with an empty 200 (APIM's default) or goes on. */
        terminateUnmatched: boolean;
        origins: string[];
        methods: string[];
        headers: string[];
        expose: string[];
        maxAge?: number;
      }
    | { policy: 'forward-request'; timeoutSeconds: number }
  );

/** Where each policy may appear (APIM's own rules). */
const ALLOWED: Record<string, readonly Section[]> = {
  base: SECTIONS,
  'include-fragment': SECTIONS,
  'rate-limit': ['inbound'],
  'rate-limit-by-key': ['inbound'],
  quota: ['inbound'],
  'quota-by-key': ['inbound'],
  'rewrite-uri': ['inbound'],
  'set-backend-service': ['inbound', 'backend'],
  'set-header': ['inbound', 'outbound', 'on-error'],
  'set-query-parameter': ['inbound', 'backend'],
  'set-variable': SECTIONS,
  'return-response': SECTIONS,
  'mock-response': ['inbound', 'outbound', 'on-error'],
  'validate-jwt': ['inbound'],
  cors: ['inbound'],
  'forward-request': ['backend'],
};

/** Policies APIM takes at some scopes only (its policy reference); any other policy takes every scope. */
const SCOPES: Record<string, readonly string[]> = {
  'rate-limit': ['product', 'API', 'operation'],
  quota: ['product'],
};

/** Policies its reference allows "only once per policy definition" (both are inbound-only). */
const ONCE = ['rate-limit', 'quota'];

export function compileSection(
  elements: XmlElement[],
  section: Section,
  file: string,
  scope: string,
): Step[] {
  return elements.map((element, index) => {
    const sections = ALLOWED[element.name];
    const fail = (reason: string, line = element.line): never => {
      throw new ArtifactError(file, line, element.name, reason);
    };
    if (!sections) fail('this policy is not supported by the simulator');
    if (ONCE.includes(element.name) && elements.slice(0, index).some((e) => e.name === element.name))
      fail('used only once per policy definition (APIM)');
    if (!sections?.includes(section)) fail(`not allowed in <${section}>`);
    // `scope` is `global`, `product:<name>`, `api:<name>` or `operation:<api>/<name>` (then `/<fragment>`).
    const kind = (scope.split(/[:/]/)[0] as string).replace(/^api$/, 'API');
    const scopes = SCOPES[element.name];
    if (scopes && !scopes.includes(kind))
      fail(
        `not allowed at ${kind} scope (APIM takes it at ${scopes.join(', ').replace(/, (?=\w+$)/, ' or ')} scope)`,
      );
    // Every policy takes an optional id (APIM: LastError.PolicyId names it).
    const { id, ...others } = element.attributes;
    const at = { file, line: element.line, scope: kind.toLowerCase(), id };
    try {
      return compileStep({ ...element, attributes: others }, at, `${scope}#${index}`, fail);
    } catch (error) {
      if (error instanceof ExpressionError) return fail(`expression: ${error.message}`);
      throw error;
    }
  });
}

function attributes(
  element: XmlElement,
  fail: (reason: string) => never,
  known: string[],
  required: string[] = [],
) {
  for (const name of Object.keys(element.attributes))
    if (!known.includes(name)) fail(`attribute ${name} is not supported`);
  for (const name of required)
    if (element.attributes[name] === undefined) fail(`attribute ${name} is required`);
  return element.attributes;
}

function noChildren(element: XmlElement, fail: (reason: string) => never, allowed: string[] = []) {
  for (const child of element.children)
    if (!allowed.includes(child.name)) fail(`element <${child.name}> is not supported here`);
}

export const positive = (value: string | undefined, what: string, fail: (reason: string) => never) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) fail(`${what} must be a positive whole number`);
  return n;
};

/**
 * APIM's rate limits are sliding windows of at most 300 s; a quota's period has no such bound, and 0
 * makes it infinite (a lifetime quota, as its reference says). quota-by-key's reference sets a minimum
 * period of 300 s.
 */
const MAX_WINDOW_SECONDS = 300;
const MIN_QUOTA_BY_KEY_SECONDS = 300;
export const period = (policy: string, value: string | undefined, fail: (reason: string) => never) => {
  const quota = policy.startsWith('quota');
  if (quota && value === '0') return 0;
  const seconds = positive(value, 'renewal-period', fail);
  if (!quota && seconds > MAX_WINDOW_SECONDS)
    fail(`renewal-period must be at most ${MAX_WINDOW_SECONDS} (seconds)`);
  if (policy === 'quota-by-key' && seconds < MIN_QUOTA_BY_KEY_SECONDS)
    fail(`renewal-period must be 0 or at least ${MIN_QUOTA_BY_KEY_SECONDS} (seconds)`);
  return seconds;
};

/** increment-count: a positive whole number, or an expression whose value each call checks so. */
const incrementCount = (value: string | undefined, fail: (reason: string) => never) => {
  if (value === undefined) return undefined;
  return value.trim().startsWith('@') ? compileValue(value) : positive(value, 'increment-count', fail);
};

/** quota-by-key's default first-period-start (APIM's reference): .NET's DateTime.MinValue. */
const FIRST_PERIOD_START = '0001-01-01T00:00:00Z';

/** first-period-start: `yyyy-MM-ddTHH:mm:ssZ` (ISO 8601, as APIM's reference gives it), no expression. */
const periodStart = (value = FIRST_PERIOD_START, fail: (reason: string) => never) => {
  const time = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(value) ? Date.parse(value) : Number.NaN;
  // Date.parse takes 30 February as 1 March: the round trip refuses it.
  if (Number.isNaN(time) || new Date(time).toISOString().slice(0, 19) !== value.slice(0, 19))
    fail(`first-period-start must be a date and time as yyyy-MM-ddTHH:mm:ssZ, not ${JSON.stringify(value)}`);
  return time;
};

const flag = (
  value: string | undefined,
  fallback: boolean,
  what: string,
  fail: (reason: string) => never,
) => {
  if (value === undefined) return fallback;
  if (value !== 'true' && value !== 'false') fail(`${what} must be true or false`);
  return value === 'true';
};

function setValue(element: XmlElement, fail: (reason: string) => never): SetValue {
  const a = attributes(element, fail, ['name', 'exists-action'], ['name']);
  const action = (a['exists-action'] ?? 'override') as ExistsAction;
  if (!['override', 'skip', 'append', 'delete'].includes(action))
    fail('exists-action must be override, skip, append or delete');
  noChildren(element, fail, ['value']);
  if (element.text) fail('text outside <value>');
  const values = element.children.map((child) => compileValue(child.text));
  if (action !== 'delete' && values.length === 0) fail('at least one <value> is required');
  return { name: a.name as string, action, values };
}

const listOf = (element: XmlElement, container: string, item: string, fail: (reason: string) => never) => {
  const found = element.children.find((child) => child.name === container);
  if (!found) return [];
  noChildren(found, fail, [item]);
  return found.children.map((child) => child.text);
};

function compileStep(element: XmlElement, at: At, counter: string, fail: (reason: string) => never): Step {
  switch (element.name) {
    case 'base':
      attributes(element, fail, []);
      noChildren(element, fail);
      return { ...at, policy: 'base' };
    case 'include-fragment':
      noChildren(element, fail);
      return {
        ...at,
        policy: 'include-fragment',
        fragment: attributes(element, fail, ['fragment-id'], ['fragment-id'])['fragment-id'] as string,
      };
    case 'rate-limit':
    case 'rate-limit-by-key':
    case 'quota':
    case 'quota-by-key': {
      const byKey = element.name.endsWith('-by-key');
      const quota = element.name.startsWith('quota');
      const known = ['calls', 'renewal-period'];
      if (!quota)
        known.push(
          'remaining-calls-header-name',
          'remaining-calls-variable-name',
          'total-calls-header-name',
          'retry-after-header-name',
          'retry-after-variable-name',
        );
      if (byKey) known.push('counter-key', 'increment-condition', 'increment-count');
      if (element.name === 'quota-by-key') known.push('first-period-start');
      // quota and quota-by-key take calls, bandwidth or both (their references).
      if (quota) known.push('bandwidth');
      const a = attributes(
        element,
        fail,
        known,
        byKey ? ['renewal-period', 'counter-key'] : ['renewal-period'],
      );
      if (a.calls === undefined && (!quota || a.bandwidth === undefined))
        fail(quota ? 'attribute calls or bandwidth is required' : 'attribute calls is required');
      noChildren(element, fail);
      // rate-limit-by-key takes expressions for calls and renewal-period; the others do not.
      const amount = (value: string | undefined, check: (value: string | undefined) => number) =>
        element.name === 'rate-limit-by-key' && value?.trim().startsWith('@')
          ? compileValue(value)
          : check(value);
      return {
        ...at,
        policy: element.name,
        counter,
        calls: a.calls === undefined ? Infinity : amount(a.calls, (value) => positive(value, 'calls', fail)),
        periodSeconds: amount(a['renewal-period'], (value) => period(element.name, value, fail)),
        counterKey: byKey ? compileValue(a['counter-key'] as string) : undefined,
        remainingHeader: a['remaining-calls-header-name'],
        totalHeader: a['total-calls-header-name'],
        retryAfterHeader: a['retry-after-header-name'],
        remainingVariable: a['remaining-calls-variable-name'],
        retryAfterVariable: a['retry-after-variable-name'],
        firstPeriodStart:
          element.name === 'quota-by-key' ? periodStart(a['first-period-start'], fail) : undefined,
        kilobytes: a.bandwidth === undefined ? undefined : positive(a.bandwidth, 'bandwidth', fail),
        incrementCondition:
          a['increment-condition'] === undefined ? undefined : compileValue(a['increment-condition']),
        incrementCount: incrementCount(a['increment-count'], fail),
      };
    }
    case 'rewrite-uri': {
      const a = attributes(element, fail, ['template', 'copy-unmatched-params'], ['template']);
      noChildren(element, fail);
      if (!a.template?.startsWith('/')) fail('template must start with /');
      return {
        ...at,
        policy: 'rewrite-uri',
        template: a.template as string,
        copyUnmatched: flag(a['copy-unmatched-params'], true, 'copy-unmatched-params', fail),
      };
    }
    case 'set-backend-service': {
      const a = attributes(element, fail, ['base-url'], ['base-url']);
      noChildren(element, fail);
      return { ...at, policy: 'set-backend-service', baseUrl: compileValue(a['base-url'] as string) };
    }
    case 'set-header':
    case 'set-query-parameter':
      return { ...at, policy: element.name, ...setValue(element, fail) };
    case 'set-variable': {
      const a = attributes(element, fail, ['name', 'value'], ['name', 'value']);
      noChildren(element, fail);
      return {
        ...at,
        policy: 'set-variable',
        name: a.name as string,
        value: compileValue(a.value as string),
      };
    }
    case 'return-response': {
      attributes(element, fail, []);
      noChildren(element, fail, ['set-status', 'set-header', 'set-body']);
      const status = element.children.find((child) => child.name === 'set-status');
      const s = status ? attributes(status, fail, ['code', 'reason'], ['code']) : {};
      const body = element.children.find((child) => child.name === 'set-body');
      if (body) attributes(body, fail, []);
      return {
        ...at,
        policy: 'return-response',
        status: status ? positive(s.code, 'code', fail) : 200,
        reason: s.reason,
        headers: element.children
          .filter((child) => child.name === 'set-header')
          .map((child) => setValue(child, fail)),
        body: body ? compileValue(body.text) : undefined,
      };
    }
    case 'mock-response': {
      const a = attributes(element, fail, ['status-code', 'content-type']);
      noChildren(element, fail);
      return {
        ...at,
        policy: 'mock-response',
        status: a['status-code'] ? positive(a['status-code'], 'status-code', fail) : 200,
        contentType: a['content-type'] ?? 'application/json',
      };
    }
    case 'validate-jwt': {
      const a = attributes(element, fail, [
        'header-name',
        'require-scheme',
        'failed-validation-httpcode',
        'failed-validation-error-message',
      ]);
      noChildren(element, fail, ['openid-config', 'audiences', 'issuers']);
      const configs = element.children.filter((child) => child.name === 'openid-config');
      if (configs.length === 0)
        fail('an <openid-config url="…"> is required (the identity provider\'s keys)');
      return {
        ...at,
        policy: 'validate-jwt',
        headerName: a['header-name'] ?? 'Authorization',
        scheme: a['require-scheme'],
        failStatus: a['failed-validation-httpcode']
          ? positive(a['failed-validation-httpcode'], 'failed-validation-httpcode', fail)
          : 401,
        failMessage: a['failed-validation-error-message'],
        openIdConfigUrls: configs.map((config) => attributes(config, fail, ['url'], ['url']).url as string),
        audiences: listOf(element, 'audiences', 'audience', fail),
        issuers: listOf(element, 'issuers', 'issuer', fail),
      };
    }
    case 'cors': {
      const a = attributes(element, fail, ['allow-credentials', 'terminate-unmatched-request']);
      noChildren(element, fail, ['allowed-origins', 'allowed-methods', 'allowed-headers', 'expose-headers']);
      const methods = element.children.find((child) => child.name === 'allowed-methods');
      const maxAge = methods?.attributes['preflight-result-max-age'];
      const origins = listOf(element, 'allowed-origins', 'origin', fail);
      if (origins.length === 0) fail('<allowed-origins> needs at least one <origin>');
      return {
        ...at,
        policy: 'cors',
        allowCredentials: flag(a['allow-credentials'], false, 'allow-credentials', fail),
        terminateUnmatched: flag(a['terminate-unmatched-request'], true, 'terminate-unmatched-request', fail),
        origins,
        methods: listOf(element, 'allowed-methods', 'method', fail),
        headers: listOf(element, 'allowed-headers', 'header', fail),
        expose: listOf(element, 'expose-headers', 'header', fail),
        maxAge: maxAge === undefined ? undefined : positive(maxAge, 'preflight-result-max-age', fail),
      };
    }
    case 'forward-request': {
      const a = attributes(element, fail, ['timeout']);
      noChildren(element, fail);
      return {
        ...at,
        policy: 'forward-request',
        timeoutSeconds: a.timeout === undefined ? 300 : positive(a.timeout, 'timeout', fail),
      };
    }
  }
  return fail('this policy is not supported by the simulator');
}
