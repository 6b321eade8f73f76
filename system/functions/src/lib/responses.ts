/**
 * The HTTP answers of the function API. Content types are fixed here, not left to the library, because
 * the spec's texts are contract down to the header: text as ASP.NET's ObjectResult sends a string,
 * JSON as it sends an object, and empty results with no body and no content type.
 */
import type { HttpResponseInit } from '@azure/functions';

export const text = (status: number, body: string): HttpResponseInit => ({
  status,
  body,
  headers: { 'content-type': 'text/plain; charset=utf-8' },
});

export const json = (status: number, value: unknown): HttpResponseInit => ({
  status,
  body: JSON.stringify(value),
  headers: { 'content-type': 'application/json; charset=utf-8' },
});

export const empty = (status: number): HttpResponseInit => ({ status });
