/**
 * The document-created integration through the stack, on a fresh data directory: a document created in
 * TasksDB/Tasks (by POST /api/managetask, or written directly as the web app's variant B does) reaches
 * PublishDocumentCreated through the change feed, goes out as a DocumentCreated event on
 * taskcreatedtopic through the Event Grid output binding, is delivered by Event Grid to the
 * TaskCreatedNotification subscription, and that function logs the task's title and id.
 */
import { randomUUID } from 'node:crypto';
import { CosmosClient } from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppStack, CORE_COMPONENTS, startAppStack } from './test-support.ts';

let app: AppStack;
beforeAll(async () => {
  app = await startAppStack({ components: [...CORE_COMPONENTS, 'eventgrid'] });
});
afterAll(async () => {
  await app?.stop();
});

/** The notification for a task, through the change feed (whose listener may still be retrying its start). */
const notified = (id: string, title: string) =>
  app.waitForFeed(
    (entries) =>
      entries.some(
        (e) =>
          e.function === 'TaskCreatedNotification' &&
          e.message === `TaskCreatedNotification: task created: ${title} (id ${id})`,
      ),
    30_000,
  );

interface Deliveries {
  attempts: { eventId: string; subscription: string; outcome: string }[];
}

describe('DocumentCreated, from TasksDB/Tasks to TaskCreatedNotification', () => {
  it('follows a task created by POST /api/managetask, the first document of a fresh database', async () => {
    const response = await fetch(app.url('managetask'), {
      method: 'POST',
      body: JSON.stringify({ Title: 'first of all', Description: 'secret', DueDate: '2030-01-01' }),
    });
    expect(response.status).toBe(200);
    const task = (await response.json()) as { id: string };
    await notified(task.id, 'first of all');
    expect(app.logs().map((e) => e.message)).toContain('PublishDocumentCreated: 1 DocumentCreated event(s)');
    const { attempts } = (await app.stack.action('eventgrid', 'deliveries')) as Deliveries;
    expect(attempts).toContainEqual(
      expect.objectContaining({ subscription: 'taskcreatedsub', outcome: 'Delivered' }),
    );
  }, 45_000);

  it('follows a document written directly with @azure/cosmos, as the web app (variant B) does', async () => {
    const client = new CosmosClient(app.stack.description.connections.DocumentDbConnection as string);
    try {
      const id = randomUUID();
      await client
        .database('TasksDB')
        .container('Tasks')
        .items.create({ id, Title: 'written directly', Description: null, DueDate: null });
      await notified(id, 'written directly');
    } finally {
      client.dispose();
    }
  }, 45_000);
});
