/**
 * The document-created integration: every document the change feed of TasksDB/Tasks reports becomes a
 * DocumentCreated event on taskcreatedtopic, whoever wrote it (this app or the web app). Tasks are never
 * replaced by this system, so each change is a creation (the latest-version change feed does not tell
 * the two apart).
 */
import { app, type InvocationContext, output } from '@azure/functions';
import { CONTAINER, DATABASE } from '../lib/cosmos.ts';
import { documentCreatedEvents } from '../lib/events.ts';

const topic = output.eventGrid({
  topicEndpointUri: 'TaskCreatedTopicEndpoint',
  topicKeySetting: 'TaskCreatedTopicKey',
});

function publishDocumentCreated(documents: unknown[], context: InvocationContext): void {
  const events = documentCreatedEvents(documents as { id: string }[], DATABASE, CONTAINER, new Date());
  context.extraOutputs.set(topic, events);
  context.log(`PublishDocumentCreated: ${events.length} DocumentCreated event(s)`);
}

app.cosmosDB('PublishDocumentCreated', {
  connection: 'DocumentDbConnection',
  databaseName: DATABASE,
  containerName: CONTAINER,
  leaseContainerName: 'leases',
  createLeaseContainerIfNotExists: true,
  // Only while no lease exists: the container is created by the first write, before this listener can
  // start, so starting "now" would lose the first task(s). Once leases exist, they say where to resume.
  startFromBeginning: true,
  extraOutputs: [topic],
  handler: publishDocumentCreated,
});
