/** Answers that are part of the web app's contract (texts are contract: tests compare them byte for byte). */
import type { Response } from 'express';

export const MAX_BODY_BYTES = 1024 * 1024;
export const TOO_LARGE = `Request too large: the limit is ${MAX_BODY_BYTES} bytes.`;
/** ASP.NET's FormOptions.ValueCountLimit: the most fields a form may have. */
export const MAX_FORM_FIELDS = 1024;
export const TOO_MANY_FIELDS = `Too many form fields: the limit is ${MAX_FORM_FIELDS}.`;
export const NOT_JSON = 'Request body is not valid JSON.';
export const JSON_ONLY = 'Content-Type must be application/json.';
export const JSON_CHARSET = 'Content-Type charset must be utf-8 or utf-16.';
export const FORM_CHARSET = 'Content-Type charset must be utf-8 or iso-8859-1.';
export const BAD_FORM_TOKEN =
  'The form has expired or was not sent by this site. Reload the page and try again.';
export const SIGN_IN_REQUIRED = 'Sign-in required.';
export const SIGN_IN_FAILED = 'Sign-in could not be completed. Start again from the home page.';
export const INTERNAL = 'Internal server error.';
export const NOT_FOUND = 'Not found.';

/**
 * Something the app depends on (the task store, the directory) did not answer or refused: 503 with
 * `publicText`; `detail` goes to the log only.
 */
export class UnavailableError extends Error {
  constructor(
    readonly publicText: string,
    detail: string,
  ) {
    super(detail);
  }
}

export function sendText(res: Response, status: number, text: string): void {
  res.status(status).type('text/plain; charset=utf-8').send(text);
}
