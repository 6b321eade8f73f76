/** Request size limits: checked before the body is parsed, so an oversized body costs no parsing. */
import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import { text } from './responses.ts';

/** JSON task bodies: well under Cosmos DB's 2 MB document limit even after Base64 growth of Description. */
export const MAX_TASK_BODY_BYTES = 1024 * 1024;
/**
 * One attachment upload (the whole multipart request). The largest body any function accepts, so
 * local.settings.json declares it as `Host.MaxRequestBodySize`: the local host then reads no more of a
 * larger body than needed for this check (Azure ignores the declaration; its host reads up to 100 MB).
 */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

export const tooLarge = (limit: number): HttpResponseInit =>
  text(413, `Request too large: the limit is ${limit} bytes.`);

/** The body as bytes, or undefined when it exceeds `limit` (declared or actual length). */
export async function readLimited(request: HttpRequest, limit: number): Promise<Buffer | undefined> {
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > limit) return undefined;
  const bytes = Buffer.from(await request.arrayBuffer());
  return bytes.length > limit ? undefined : bytes;
}
