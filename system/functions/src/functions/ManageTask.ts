/**
 * POST and GET /api/managetask — tasks as documents in TasksDB/Tasks, Description encrypted at rest
 * with the vault's EncryptionKey (the POST answer carries the encrypted form, the GET the plain text).
 */
import { randomUUID } from 'node:crypto';
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { MAX_TASK_BODY_BYTES, readLimited, tooLarge } from '../lib/body.ts';
import { collectionValue } from '../lib/collections.ts';
import { tasksContainer } from '../lib/cosmos.ts';
import { decrypt, encrypt, keyFromSecret } from '../lib/encryption.ts';
import { logFailure } from '../lib/failure.ts';
import { empty, json, text } from '../lib/responses.ts';
import { parseTask, type TaskFields } from '../lib/task.ts';
import { encryptionKeySecret } from '../lib/vault.ts';

interface TaskDocument extends TaskFields {
  id: string;
}

/**
 * Ids no document can be read by, which answer as an unknown one: with characters Cosmos DB refuses,
 * longer than it allows, blank (the SDK refuses to read one), or a URL dot segment (`.` and `..` are
 * resolved away from the request's path before it reaches the account, whose signature check fails).
 */
const unreadableId = (id: string) =>
  /[/\\?#]/.test(id) || id.length > 255 || /^\s*$/.test(id) || id === '.' || id === '..';

const encryptionKey = async () => keyFromSecret(await encryptionKeySecret());

async function create(request: HttpRequest): Promise<HttpResponseInit> {
  const body = await readLimited(request, MAX_TASK_BODY_BYTES);
  if (!body) return tooLarge(MAX_TASK_BODY_BYTES);
  const parsed = parseTask(body, false);
  if (parsed.kind === 'wrongType') return text(400, 'Title, Description and DueDate must be strings.');
  // An unreadable body has no title either, which is what the original answers for it.
  if (parsed.kind === 'notObject' || !parsed.fields.Title) return text(400, 'Please provide a title.');
  const { Title, Description, DueDate = null } = parsed.fields;
  const key = await encryptionKey();
  const task: TaskDocument = {
    id: randomUUID(),
    Title,
    Description: Description === undefined ? null : encrypt(Description, key),
    DueDate,
  };
  await (await tasksContainer()).items.create(task);
  return json(200, task);
}

async function read(request: HttpRequest): Promise<HttpResponseInit> {
  const taskId = collectionValue(request.query, 'taskId');
  if (!taskId) return text(400, 'Please provide taskId.');
  if (unreadableId(taskId)) return empty(404);
  const { resource } = await (await tasksContainer()).item(taskId, taskId).read<TaskDocument>();
  if (!resource) return empty(404);
  const { id, Title, Description, DueDate } = resource;
  const plain = Description === null ? null : decrypt(Description, await encryptionKey());
  return json(200, { id, Title, Description: plain, DueDate });
}

async function manageTask(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  try {
    return await (request.method === 'POST' ? create(request) : read(request));
  } catch (error) {
    // Vault, key or database failures: the client gets an empty 500, the log gets the message.
    logFailure(context, request.method === 'POST' ? 'creating the task' : 'reading the task', error);
    return empty(500);
  }
}

app.http('ManageTask', {
  methods: ['GET', 'POST'],
  authLevel: 'function',
  route: 'managetask',
  handler: manageTask,
});
