/** POST /api/uploadattachment — a multipart upload stored as blob attachments/<taskId>/<fileName>. */
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { blobContainer, ensureContainer } from '../lib/blob.ts';
import { MAX_UPLOAD_BYTES, readLimited, tooLarge } from '../lib/body.ts';
import { logFailure, messageOf } from '../lib/failure.ts';
import { nameProblem } from '../lib/names.ts';
import { empty, text } from '../lib/responses.ts';
import { MissingSettingError } from '../lib/settings.ts';

/** ASP.NET's HasFormContentType: both form encodings count (a url-encoded form then simply has no file). */
const FORM_TYPES = /^\s*(multipart\/form-data|application\/x-www-form-urlencoded)\s*(;|$)/i;

/** The form, or undefined when the body does not parse as the form its content type announces. */
async function parseForm(body: Buffer, contentType: string): Promise<FormData | undefined> {
  try {
    return await new Response(new Uint8Array(body), { headers: { 'content-type': contentType } }).formData();
  } catch {
    return undefined;
  }
}

async function uploadAttachment(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const contentType = request.headers.get('content-type') ?? '';
  if (!FORM_TYPES.test(contentType)) return text(400, 'Please send a multipart form.');
  const body = await readLimited(request, MAX_UPLOAD_BYTES);
  if (!body) return tooLarge(MAX_UPLOAD_BYTES);
  const form = await parseForm(body, contentType);
  if (!form) return text(400, 'Please send a multipart form.');
  const file = [...form.values()].find((value): value is File => typeof value !== 'string');
  const taskId = form.get('taskId');
  if (!file || typeof taskId !== 'string' || !taskId) return text(400, 'Please provide a file and taskId.');
  const problem = nameProblem(taskId, file.name);
  if (problem) return text(400, problem);
  const blobName = `${taskId}/${file.name}`;
  try {
    const container = await ensureContainer(blobContainer('StorageConnection', 'attachments'));
    // A second upload of the same name replaces the blob, content type and metadata (Azure's default).
    await container.getBlockBlobClient(blobName).uploadData(Buffer.from(await file.arrayBuffer()), {
      blobHTTPHeaders: { blobContentType: file.type || 'application/octet-stream' },
      metadata: { TaskId: taskId },
    });
  } catch (error) {
    if (error instanceof MissingSettingError) {
      logFailure(context, 'uploading', error);
      return empty(500);
    }
    return text(500, `Error uploading file: ${messageOf(error)}`);
  }
  return text(200, `File uploaded: ${blobName}`);
}

app.http('UploadAttachment', {
  methods: ['POST'],
  authLevel: 'function',
  route: 'uploadattachment',
  handler: uploadAttachment,
});
