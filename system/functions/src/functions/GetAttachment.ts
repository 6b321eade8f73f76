/** GET /api/getattachment — an attachment's TaskId metadata, content type and address. */
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { blobContainer } from '../lib/blob.ts';
import { collectionValue } from '../lib/collections.ts';
import { logFailure, messageOf } from '../lib/failure.ts';
import { nameProblem } from '../lib/names.ts';
import { empty, json, text } from '../lib/responses.ts';
import { MissingSettingError } from '../lib/settings.ts';

const isNotFound = (error: unknown) => (error as { statusCode?: number }).statusCode === 404;

async function getAttachment(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const taskId = collectionValue(request.query, 'taskId');
  const fileName = collectionValue(request.query, 'fileName');
  if (!taskId || !fileName) return text(400, 'Please provide taskId and fileName.');
  const problem = nameProblem(taskId, fileName);
  if (problem) return text(400, problem);
  try {
    const blob = blobContainer('StorageConnection', 'attachments').getBlockBlobClient(
      `${taskId}/${fileName}`,
    );
    const properties = await blob.getProperties();
    // Metadata keys come back lower-cased from storage: compare without case.
    const metadata = Object.entries(properties.metadata ?? {});
    const taskIdValue = metadata.find(([key]) => key.toLowerCase() === 'taskid')?.[1] ?? null;
    return json(200, { TaskId: taskIdValue, ContentType: properties.contentType ?? null, Uri: blob.url });
  } catch (error) {
    if (isNotFound(error)) return empty(404);
    if (error instanceof MissingSettingError) {
      logFailure(context, 'reading metadata', error);
      return empty(500);
    }
    return text(500, `Error retrieving file metadata: ${messageOf(error)}`);
  }
}

app.http('GetAttachment', {
  methods: ['GET'],
  authLevel: 'function',
  route: 'getattachment',
  handler: getAttachment,
});
