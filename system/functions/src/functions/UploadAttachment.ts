/** POST /api/uploadattachment — a multipart upload stored as blob attachments/<taskId>/<fileName>. */
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { blobContainer, ensureContainer } from '../lib/blob.ts';
import { MAX_UPLOAD_BYTES, readLimited, tooLarge } from '../lib/body.ts';
import { collectionValue } from '../lib/collections.ts';
import { logFailure, messageOf } from '../lib/failure.ts';
import { parseMultipart } from '../lib/multipart.ts';
import { nameProblem } from '../lib/names.ts';
import { empty, text } from '../lib/responses.ts';
import { MissingSettingError } from '../lib/settings.ts';

/** ASP.NET's HasFormContentType: both form encodings count (a url-encoded form then simply has no file). */
const FORM_TYPES = /^\s*(multipart\/form-data|application\/x-www-form-urlencoded)\s*(;|$)/i;
const MULTIPART = /^\s*multipart\/form-data\s*(;|$)/i;

async function uploadAttachment(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const contentType = request.headers.get('content-type') ?? '';
  if (!FORM_TYPES.test(contentType)) return text(400, 'Please send a multipart form.');
  const body = await readLimited(request, MAX_UPLOAD_BYTES);
  if (!body) return tooLarge(MAX_UPLOAD_BYTES);
  // A url-encoded form can carry no file.
  if (!MULTIPART.test(contentType)) return text(400, 'Please provide a file and taskId.');
  const form = parseMultipart(body, contentType);
  if (!form) return text(400, 'Please send a multipart form.');
  const [file] = form.files;
  const taskId = collectionValue(form.fields, 'taskId');
  if (!file || !taskId) return text(400, 'Please provide a file and taskId.');
  const problem = nameProblem(taskId, file.name);
  if (problem) return text(400, problem);
  const blobName = `${taskId}/${file.name}`;
  try {
    const container = await ensureContainer(blobContainer('StorageConnection', 'attachments'));
    // A second upload of the same name replaces the blob, content type and metadata (Azure's default).
    await container.getBlockBlobClient(blobName).uploadData(file.content, {
      blobHTTPHeaders: { blobContentType: file.contentType || 'application/octet-stream' },
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
