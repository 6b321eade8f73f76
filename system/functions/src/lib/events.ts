/** The DocumentCreated events published for documents of TasksDB/Tasks (Event Grid schema). */
import { randomUUID } from 'node:crypto';
import type { EventGridPartialEvent } from '@azure/functions';

export const DOCUMENT_CREATED = 'Microsoft.DocumentDB.DocumentCreated';

interface TaskDocument {
  id: string;
  Title?: unknown;
  Description?: unknown;
  DueDate?: unknown;
}

/**
 * One event per document; data holds only the task's fields (no `_rid`, `_etag` … of the store), with
 * Description as stored (encrypted): the event never carries a decrypted text.
 */
export function documentCreatedEvents(
  documents: TaskDocument[],
  database: string,
  container: string,
  now: Date,
): EventGridPartialEvent[] {
  return documents.map((document) => ({
    id: randomUUID(),
    eventType: DOCUMENT_CREATED,
    subject: `/dbs/${database}/colls/${container}/docs/${document.id}`,
    eventTime: now.toISOString(),
    dataVersion: '1.0',
    data: {
      id: document.id,
      Title: document.Title ?? null,
      Description: document.Description ?? null,
      DueDate: document.DueDate ?? null,
    },
  }));
}
