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

/** A response the gateway makes itself (refusals, policy answers, backend failures). */
export interface GatewayAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

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

/** APIM's 401 for a missing or refused key: a challenge naming the API (realm) and its key header. */
export const keyRefused = (message: string, realm: string, keyHeader: string) =>
  apimError(401, message, {
    'www-authenticate': `AzureApiManagementKey realm="${realm}",name="${keyHeader}",type="header"`,
  });

/**
 * validate-jwt's own texts when the policy sets no failed-validation-error-message (APIM's LastError
 * TokenNotPresent, and what a forged or malformed token gets).
 */
export const JWT_MISSING = 'JWT not present.';
export const JWT_INVALID = 'Invalid JWT.';

export const notFound = () => apimError(404, 'Resource not found');
/** A request target that is not a URL (`http://[::1`, `http://a%zz/x`): refused before any routing. */
export const invalidUrl = () => apimError(400, 'Bad Request - Invalid URL');
export const rateLimited = (seconds: number, headers: Record<string, string> = {}) =>
  apimError(429, `Rate limit is exceeded. Try again in ${seconds} seconds.`, headers);

/**
 * quota used up: APIM's 403 with the wait as .NET's TimeSpan prints it, `[d.]hh:mm:ss` (APIM's error
 * reference: `xx:xx:xx`; answers of APIM itself with days: `5.03:23:11`, azure-docs#16282), and Retry-After.
 */
export function quotaExceeded(seconds: number) {
  // A lifetime quota (renewal-period 0) is never replenished: there is no wait to tell.
  if (seconds === Infinity) return apimError(403, 'Out of call volume quota.');
  const days = Math.floor(seconds / 86400);
  const time = new Date((seconds % 86400) * 1000).toISOString().slice(11, 19);
  const wait = days ? `${days}.${time}` : time;
  return apimError(403, `Out of call volume quota. Quota will be replenished in ${wait}.`, {
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

export const newRequestId = () => randomUUID();
