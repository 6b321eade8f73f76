/** Blob trigger on tasks/{name}.json (StorageConnection): logs the task blob's content. */
import { app, type InvocationContext } from '@azure/functions';

function processTask(blob: unknown, context: InvocationContext): void {
  const content = Buffer.isBuffer(blob) ? blob.toString('utf8') : String(blob);
  context.log(`ProcessTask: tasks/${String(context.triggerMetadata?.name)}.json: ${content}`);
}

app.storageBlob('ProcessTask', {
  path: 'tasks/{name}.json',
  connection: 'StorageConnection',
  handler: processTask,
});
