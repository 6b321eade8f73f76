/** POST /api/createtask — the create-only variant: the task as JSON in blob tasks/<Id>.json. */
import { randomUUID } from 'node:crypto';
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { blobContainer, ensureContainer } from '../lib/blob.ts';
import { MAX_TASK_BODY_BYTES, readLimited, tooLarge } from '../lib/body.ts';
import { logFailure } from '../lib/failure.ts';
import { empty, json, text } from '../lib/responses.ts';
import { parseTask } from '../lib/task.ts';

const INVALID = 'Please provide a valid task with a title.';

async function createTask(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const body = await readLimited(request, MAX_TASK_BODY_BYTES);
  if (!body) return tooLarge(MAX_TASK_BODY_BYTES);
  const parsed = parseTask(body, true);
  if (parsed.kind !== 'task' || !parsed.fields.Title) return text(400, INVALID);
  const { Title, Description = null, DueDate = null } = parsed.fields;
  // The property is `Id` in this variant; a client's value is always replaced.
  const task = { Id: randomUUID(), Title, Description, DueDate };
  const content = JSON.stringify(task);
  try {
    // Written with the SDK rather than a blob output binding: a binding's path is fixed before the
    // function runs, and the blob must be named after the Id generated here.
    const container = await ensureContainer(blobContainer('AzureWebJobsStorage', 'tasks'));
    await container.getBlockBlobClient(`${task.Id}.json`).upload(content, Buffer.byteLength(content), {
      blobHTTPHeaders: { blobContentType: 'application/json' },
    });
  } catch (error) {
    logFailure(context, 'writing the task blob', error);
    return empty(500);
  }
  return json(200, task);
}

app.http('CreateTask', {
  methods: ['POST'],
  authLevel: 'function',
  route: 'createtask',
  handler: createTask,
});
