/** The triggered functions through the local host: blob, timer, Event Grid and Event Hubs triggers. */
import { EventHubProducerClient } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppStack, startAppStack } from './test-support.ts';

let app: AppStack;
beforeAll(async () => {
  app = await startAppStack({ components: ['identity', 'blob', 'eventhubs', 'functions'] });
});
afterAll(async () => {
  await app?.stop();
});

const admin = (path: string, body: unknown) =>
  fetch(`${app.baseUrl}/admin/${path}`, {
    method: 'POST',
    headers: { 'x-functions-key': app.stack.description.masterKey, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('ProcessTask', () => {
  it('logs the content of the blob CreateTask wrote', async () => {
    const response = await fetch(app.url('createtask'), {
      method: 'POST',
      body: JSON.stringify({ Title: 'from the blob trigger', DueDate: 'soon' }),
    });
    const task = (await response.json()) as { Id: string };
    const entry = await app.waitForLog(
      (e) => e.function === 'ProcessTask' && e.message.startsWith('ProcessTask:'),
    );
    expect(entry.message).toBe(`ProcessTask: tasks/${task.Id}.json: ${JSON.stringify(task)}`);
  });
});

describe('CheckTasks', () => {
  const runs = () =>
    app.logs().filter((e) => e.function === 'CheckTasks' && e.message.startsWith('CheckTasks:'));

  it('runs through the admin API', async () => {
    const before = runs().length;
    expect((await admin('functions/CheckTasks', { input: '' })).status).toBe(202);
    await app.waitForLogs(() => runs().length > before);
    expect(runs().at(-1)?.message).toMatch(/^CheckTasks: checking tasks \(past due: (true|false)\)$/);
  });

  it('is registered with the spec’s schedule, 0 */5 * * * *', async () => {
    // Moving the clock 5 minutes would also fire a timer of another period: the schedule is read back.
    const response = await fetch(`${app.baseUrl}/admin/functions/CheckTasks`, {
      headers: { 'x-functions-key': app.stack.description.masterKey },
    });
    expect(response.status).toBe(200);
    const { config } = (await response.json()) as { config: { bindings: Record<string, unknown>[] } };
    expect(config.bindings.filter((binding) => binding.type === 'timerTrigger')).toEqual([
      expect.objectContaining({ schedule: '0 */5 * * * *' }),
    ]);
  });

  it('runs when the stack clock moves 5 minutes', async () => {
    const before = runs().length;
    await app.stack.advanceClock(5 * 60_000);
    await app.waitForLogs(() => runs().length > before);
  });
});

describe('TaskCreatedNotification', () => {
  const deliver = (events: unknown[]) =>
    fetch(
      `${app.baseUrl}/runtime/webhooks/eventgrid?functionName=TaskCreatedNotification&code=${app.stack.description.masterKey}`,
      {
        method: 'POST',
        headers: { 'aeg-event-type': 'Notification', 'content-type': 'application/json' },
        body: JSON.stringify(events),
      },
    );
  const event = (data: unknown) => ({
    id: crypto.randomUUID(),
    topic: '/taskcreatedtopic',
    subject: '/dbs/TasksDB/colls/Tasks/docs/x',
    eventType: 'Microsoft.DocumentDB.DocumentCreated',
    eventTime: new Date().toISOString(),
    dataVersion: '1.0',
    data,
  });

  it('logs the task title and id of a DocumentCreated event', async () => {
    const id = crypto.randomUUID();
    expect(
      (await deliver([event({ id, Title: 'Notify me', Description: 'enc', DueDate: null })])).status,
    ).toBe(202);
    const entry = await app.waitForLog(
      (e) =>
        e.function === 'TaskCreatedNotification' &&
        e.message.startsWith('TaskCreatedNotification:') &&
        e.message.includes(id),
    );
    expect(entry.message).toBe(`TaskCreatedNotification: task created: Notify me (id ${id})`);
  });

  it('logs a warning for an event without a task, and succeeds (a retry could not help)', async () => {
    const malformed = event({ something: 'else' });
    expect((await deliver([malformed])).status).toBe(202);
    const entry = await app.waitForLog(
      (e) =>
        e.function === 'TaskCreatedNotification' &&
        e.message.startsWith('TaskCreatedNotification:') &&
        e.message.includes(malformed.id),
    );
    expect(entry).toMatchObject({ level: 'warning' });
  });
});

describe('ProcessTaskEvents', () => {
  it('logs each message of a batch sent to taskevents', async () => {
    const producer = new EventHubProducerClient(
      app.stack.description.connections.StreamHubConnection ?? '',
      'taskevents',
    );
    const task = JSON.stringify({
      id: crypto.randomUUID(),
      title: 'streamed',
      description: 'd',
      dueDate: null,
    });
    const plain = `plain text ${crypto.randomUUID()}`;
    try {
      const batch = await producer.createBatch();
      for (const body of [task, plain]) expect(batch.tryAdd({ body })).toBe(true);
      await producer.sendBatch(batch);
    } finally {
      await producer.close();
    }
    for (const body of [task, plain]) {
      await app.waitForLog(
        (e) => e.function === 'ProcessTaskEvents' && e.message === `ProcessTaskEvents: message: ${body}`,
      );
    }
  });
});

describe('PublishDocumentCreated', () => {
  it('is registered as Azure needs it: change feed of TasksDB/Tasks with leases, Event Grid output by setting names', async () => {
    const response = await fetch(`${app.baseUrl}/admin/functions/PublishDocumentCreated`, {
      headers: { 'x-functions-key': app.stack.description.masterKey },
    });
    const { config } = (await response.json()) as { config: { bindings: Record<string, unknown>[] } };
    expect(config.bindings).toEqual([
      expect.objectContaining({
        type: 'cosmosDBTrigger',
        direction: 'in',
        connection: 'DocumentDbConnection',
        databaseName: 'TasksDB',
        containerName: 'Tasks',
        leaseContainerName: 'leases',
        createLeaseContainerIfNotExists: true,
        startFromBeginning: true,
      }),
      expect.objectContaining({
        type: 'eventGrid',
        direction: 'out',
        topicEndpointUri: 'TaskCreatedTopicEndpoint',
        topicKeySetting: 'TaskCreatedTopicKey',
      }),
    ]);
  });
});
