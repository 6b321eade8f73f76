/**
 * Event Grid's error responses: `{"error":{"code","message","details":[{"code","message"}]}}`, where the
 * top-level code is the HTTP status name (.NET's `HttpStatusCode`), the detail code says what went wrong,
 * and most messages end with a "Report '<request id>:1:<time> (UTC)'" suffix naming the request.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { StackClock } from '../core/clock.ts';
import { sendJson } from '../core/http.ts';

/** The top-level codes, as .NET names the statuses. */
const STATUS_NAMES: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  413: 'RequestEntityTooLarge',
  500: 'InternalServerError',
  503: 'ServiceUnavailable',
};

export type DetailCode =
  | 'InputJsonInvalid'
  | 'InvalidSas'
  | 'Unauthorized'
  | 'ResourceNotFound'
  | 'MethodNotAllowed'
  | 'PayloadTooLarge'
  | 'InternalServerError'
  | 'ServiceUnavailable';

/** A refusal the route answers with; `report: false` for the few messages Azure sends without the suffix. */
export class EventGridError extends Error {
  constructor(
    readonly status: number,
    readonly detailCode: DetailCode,
    message: string,
    readonly report = true,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * A date as .NET's `M/d/yyyy h:mm:ss tt` (en-US) prints it in UTC: the form of the report suffix and of
 * a SAS token's expiry (`e=`).
 */
export function serviceTime(date: Date): string {
  const hours = date.getUTCHours();
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${date.getUTCMonth() + 1}/${date.getUTCDate()}/${date.getUTCFullYear()} ` +
    `${hours % 12 === 0 ? 12 : hours % 12}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} ` +
    (hours >= 12 ? 'PM' : 'AM')
  );
}

export function sendError(res: ServerResponse, error: EventGridError, clock: StackClock): void {
  const requestId = randomUUID();
  const message = error.report
    ? `${error.message} Report '${requestId}:1:${serviceTime(clock.date())} (UTC)' to our forums for assistance or raise a support ticket.`
    : error.message;
  const code = STATUS_NAMES[error.status] ?? 'BadRequest';
  sendJson(
    res,
    error.status,
    { error: { code, message, details: [{ code: error.detailCode, message }] } },
    { 'x-ms-request-id': requestId, ...error.headers },
  );
}
