/**
 * The document-created integration: every document the change feed of TasksDB/Tasks reports becomes a
 * `Microsoft.DocumentDB.DocumentCreated` event on taskcreatedtopic, whoever wrote it. Tasks are never
 * replaced by this system, so each change is a creation (the latest-version change feed does not tell
 * the two apart). The data carries the task as stored: Description stays encrypted.
 */
import { randomUUID } from 'node:crypto';
import { app, type EventGridPartialEvent, type InvocationContext, output } from '@azure/functions';
import { CONTAINER, DATABASE } from '../lib/cosmos.ts';

const topic = output.eventGrid({
  topicEndpointUri: 'TaskCreatedTopicEndpoint',
  topicKeySetting: 'TaskCreatedTopicKey',
});

interface ChangedDocument {
  id: string;
  Title?: unknown;
  Description?: unknown;
  DueDate?: unknown;
}

function publishDocumentCreated(documents: unknown[], context: InvocationContext): void {
  const events: EventGridPartialEvent[] = (documents as ChangedDocument[]).map((document) => ({
    id: randomUUID(),
    eventType: 'Microsoft.DocumentDB.DocumentCreated',
    subject: `/dbs/${DATABASE}/colls/${CONTAINER}/docs/${document.id}`,
    eventTime: new Date().toISOString(),
    dataVersion: '1.0',
    data: {
      id: document.id,
      Title: document.Title ?? null,
      Description: document.Description ?? null,
      DueDate: document.DueDate ?? null,
    },
  }));
  context.extraOutputs.set(topic, events);
  context.log(
    `PublishDocumentCreated: ${events.length} DocumentCreated event(s) for ${events.map((e) => e.data?.id).join(', ')}`,
  );
}

app.cosmosDB('PublishDocumentCreated', {
  connection: 'DocumentDbConnection',
  databaseName: DATABASE,
  containerName: CONTAINER,
  leaseContainerName: 'leases',
  createLeaseContainerIfNotExists: true,
  extraOutputs: [topic],
  handler: publishDocumentCreated,
});
