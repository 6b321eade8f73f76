/** API Management's own answers, byte for byte as the gateway sends them. */
import { randomUUID } from 'node:crypto';

/** A problem in an artifact: refuses the start (or a reload) naming the file, line and policy. */
export class ArtifactError extends Error {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    readonly policy: string | undefined,
    readonly reason: string,
  ) {
    super(`${file}${line === undefined ? '' : ` line ${line}`}${policy ? `, <${policy}>` : ''}: ${reason}`);
  }
}

/**
 * APIM's context.LastError (its error-handling reference): the element that failed (a policy, or a built-in
 * step), a machine-friendly reason, the message, and — for a policy — where it sits. Unknown parts are absent
 * (null to expressions).
 */
export interface LastError {
  source: string;
  reason: string;
  message: string;
  /** global, product, api or operation. */
  scope?: string;
  section?: string;
  /** The nested policy's path (`choose[3]/when[2]`): none here, as no policy nests others. */
  path?: string;
  /** The policy's `id` attribute. */
  policyId?: string;
}

/** A response the gateway makes itself (refusals, policy answers, backend failures). */
export interface GatewayAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** An error's answer, and the context.LastError the on-error section reads. */
export interface GatewayError {
  answer: GatewayAnswer;
  error: LastError;
}

/** A policy's error (APIM's "Predefined errors for policies"): LastError.Message is the answer's message. */
const policyError = (source: string, reason: string, message: string, answer: GatewayAnswer) => ({
  answer,
  error: { source, reason, message },
});

/** APIM's error body: `{ "statusCode": N, "message": "…" }` (its spacing), as application/json. */
export function apimError(
  status: number,
  message: string,
  headers: Record<string, string> = {},
  extra: Record<string, string> = {},
): GatewayAnswer {
  const fields = [`"statusCode": ${status}`, `"message": ${JSON.stringify(message)}`];
  for (const [name, value] of Object.entries(extra))
    fields.push(`${JSON.stringify(name)}: ${JSON.stringify(value)}`);
  return {
    status,
    headers: { 'content-type': 'application/json', ...headers },
    body: `{ ${fields.join(', ')} }`,
  };
}

export const MISSING_KEY =
  'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.';
export const INVALID_KEY =
  'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.';

/**
 * APIM's 401 for a missing or refused key: a challenge naming the API (realm) and its key header. LastError's
 * Message is the answer's (the reference's table words the first "…requests to this API."; the answer, the
 * spec's text, says "an API").
 */
export const keyRefused = (message: string, realm: string, keyHeader: string): GatewayError => ({
  answer: apimError(401, message, {
    'www-authenticate': `AzureApiManagementKey realm="${realm}",name="${keyHeader}",type="header"`,
  }),
  error: {
    source: 'authorization',
    reason: message === MISSING_KEY ? 'SubscriptionKeyNotFound' : 'SubscriptionKeyInvalid',
    message,
  },
});

/**
 * validate-jwt's own texts when the policy sets no failed-validation-error-message (APIM's LastError
 * TokenNotPresent, and what a forged or malformed token gets).
 */
export const JWT_MISSING = 'JWT not present.';
export const JWT_INVALID = 'Invalid JWT.';

/** No API or operation matched; LastError words it as APIM's reference does, not as the answer. */
export const notFound = (): GatewayError => ({
  answer: apimError(404, 'Resource not found'),
  error: {
    source: 'configuration',
    reason: 'OperationNotFound',
    message: 'Unable to match incoming request to an operation.',
  },
});
/** A request target that is not a URL (`http://[::1`, `http://a%zz/x`): refused before any routing. */
export const invalidUrl = () => apimError(400, 'Bad Request - Invalid URL');
/** rate-limit(-by-key) refused a call: `source` is the policy. */
export function rateLimited(source: string, seconds: number, headers: Record<string, string> = {}) {
  const message = `Rate limit is exceeded. Try again in ${seconds} seconds.`;
  return policyError(source, 'RateLimitExceeded', message, apimError(429, message, headers));
}

/**
 * quota used up (its calls, or its bandwidth: `Out of bandwidth quota.`): APIM's 403 with the wait as .NET's TimeSpan prints it, `[d.]hh:mm:ss` (APIM's error
 * reference: `xx:xx:xx`; answers of APIM itself with days: `5.03:23:11`, azure-docs#16282), and Retry-After.
 */
export function quotaExceeded(source: string, seconds: number, bandwidth = false) {
  const what = bandwidth ? 'bandwidth' : 'call volume';
  const refused = (message: string, headers: Record<string, string> = {}) =>
    policyError(source, 'QuotaExceeded', message, apimError(403, message, headers));
  // A lifetime quota (renewal-period 0) is never replenished: there is no wait to tell.
  if (seconds === Infinity) return refused(`Out of ${what} quota.`);
  const days = Math.floor(seconds / 86400);
  const time = new Date((seconds % 86400) * 1000).toISOString().slice(11, 19);
  const wait = days ? `${days}.${time}` : time;
  return refused(`Out of ${what} quota. Quota will be replenished in ${wait}.`, {
    'retry-after': String(seconds),
  });
}

/**
 * A backend that cannot be reached or did not answer within forward-request's timeout: APIM's 500, with
 * the request's id as activityId. APIM gives no 504 of its own for a timeout (azure-docs#109013: "a 500
 * internal server error due to timeout at forward-request"); only context.LastError.Reason tells them apart.
 */
export const backendFailed = (requestId: string) =>
  apimError(500, 'Internal server error', {}, { activityId: requestId });

/**
 * The backend call failed (LastError.Reason Timeout or BackendConnectionFailure, Source forward-request, as
 * the reference's tables give them; its Message column says only "multiple": these are the words APIM's
 * traces show for an unreachable backend, and a plain one for a timeout).
 */
export const backendError = (requestId: string, timedOut: boolean): GatewayError => ({
  answer: backendFailed(requestId),
  error: timedOut
    ? { source: 'forward-request', reason: 'Timeout', message: 'Request to the backend service timed out' }
    : {
        source: 'forward-request',
        reason: 'BackendConnectionFailure',
        message: 'Error occurred while calling backend service.',
      },
});

/** A policy failed evaluating an expression (or its value): APIM's 500, ExpressionValueEvaluationFailure. */
export const expressionFailed = (requestId: string, source: string, why: string): GatewayError => ({
  answer: backendFailed(requestId),
  error: {
    source,
    reason: 'ExpressionValueEvaluationFailure',
    message: `Expression evaluation failed. ${why}`,
  },
});

export const newRequestId = () => randomUUID();
