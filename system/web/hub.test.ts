/**
 * Variant A's stream hub connection, each way the settings allow: a connection string (the body read
 * back byte for byte), the app's managed identity (StreamHubConnection__fullyQualifiedNamespace), a hub
 * that never answers (the task kept, the request bounded, the failure logged) and no setting at all
 * (the spec's placeholder: nothing sent, the task kept).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { EventHubConsumerClient, earliestEventPosition, type ReceivedEventData } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../../emulators/core/testing.ts';
import type { Stack } from '../../emulators/stack/launcher.ts';
import { openPage, postForm } from './form-client.ts';
import type { Task } from './src/tasks.ts';
import { startStores, startWebApp, type WebApp } from './test-support.ts';

const data = testDataDir();
let stack: Stack;
const apps: WebApp[] = [];

afterAll(async () => {
  await Promise.all(apps.map((app) => app.stop()));
  await stack?.stop();
  data.remove();
});

async function webApp(settings: Record<string, string>) {
  const app = await startWebApp(settings);
  apps.push(app);
  return app;
}

/** Creates a task through the form; answers the response and the task as the API lists it. */
async function create(app: WebApp, title: string) {
  const page = await openPage(app.url);
  const response = await postForm(
    app.url,
    '/tasks',
    { _csrf: page.token, title, dueDate: '2027-01-01' },
    page.cookie,
  );
  const task = ((await (await fetch(`${app.url}/api/tasks`)).json()) as Task[]).find(
    (t) => t.title === title,
  );
  return { response, task };
}

/** Every event of taskevents so far, bodies as the bytes sent, once there are at least `expected`. */
async function hubEvents(expected: number): Promise<ReceivedEventData[]> {
  const connection = stack.description.connections.StreamHubConnection as string;
  const consumer = new EventHubConsumerClient('$Default', connection, 'taskevents');
  const events: ReceivedEventData[] = [];
  const subscription = consumer.subscribe(
    { processEvents: async (received) => void events.push(...received), processError: async () => {} },
    { startPosition: earliestEventPosition, skipParsingBodyAsJson: true, maxWaitTimeInSeconds: 1 },
  );
  try {
    await waitFor(`${expected} event(s) on taskevents`, () => events.length >= expected, 20_000);
    return events;
  } finally {
    await subscription.close();
    await consumer.close();
  }
}
const bodyText = (event: ReceivedEventData) => Buffer.from(event.body as Uint8Array).toString('utf8');

// The silent hub's test waits out the send's limit on a server of its own: it runs beside the tests
// of the stack's hub, which run in order (each reads what the ones before it left on taskevents), and
// beside the test without a hub setting, which uses no hub at all.
describe.concurrent('a hub that does not answer', () => {
  let silent: Server;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // Accepts AMQP connections and never says a word.
    silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent?.close(resolve));
  });

  it('loses no task and does not hang Create: the send gives up within its limit and says so in the log', async () => {
    const port = (silent.address() as { port: number }).port;
    const app = await webApp({
      StreamHubConnection: `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=k;SharedAccessKey=never-logged;UseDevelopmentEmulator=true`,
    });
    const { response, task } = await create(app, 'kept anyway');
    expect(response.status).toBe(303);
    expect(task?.title).toBe('kept anyway');
    await app.waitForOutput(`task ${task?.id}: message to taskevents not sent:`);
    expect(sockets.length).toBeGreaterThan(0);
    expect(app.output()).not.toContain('never-logged');
    // And it serves on.
    expect((await fetch(`${app.url}/`)).status).toBe(200);
  });
});

describe.concurrent('the stack’s hub', () => {
  // Started here, not for the file: the other groups use no stack and start beside it.
  beforeAll(async () => {
    stack = await startStores(data.dir, ['identity', 'eventhubs']);
  });

  describe.sequential('the task message', () => {
    it('with StreamHubConnection: one event whose body is the UTF-8 JSON of the task', async () => {
      const app = await webApp({
        StreamHubConnection: stack.description.connections.StreamHubConnection as string,
      });
      const { response, task } = await create(app, 'Über café ✓');
      expect(response.status).toBe(303);
      const events = await hubEvents(1);
      expect(events.map(bodyText)).toEqual([JSON.stringify(task)]);
      expect(bodyText(events[0] as ReceivedEventData)).toContain('"title":"Über café ✓"');
    });

    it('with StreamHubConnection__fullyQualifiedNamespace: sent with the app managed identity (Data Sender)', async () => {
      const identity = stack.description.identities.webApp;
      const app = await webApp({
        StreamHubConnection__fullyQualifiedNamespace: stack.description.endpoints.eventhubs
          ?.fullyQualifiedNamespace as string,
        IDENTITY_ENDPOINT: identity?.IDENTITY_ENDPOINT as string,
        IDENTITY_HEADER: identity?.IDENTITY_HEADER as string,
      });
      const { response, task } = await create(app, 'sent by identity');
      expect(response.status).toBe(303);
      const events = await hubEvents(2);
      expect(events.map(bodyText)).toContain(JSON.stringify(task));
      expect(app.output()).not.toContain('not sent');
    });
  });

  describe.sequential('a hub that goes away and comes back', () => {
    it('keeps the tasks created meanwhile (logged as not sent) and sends the next Create once it is back', async () => {
      const app = await webApp({
        StreamHubConnection: stack.description.connections.StreamHubConnection as string,
      });
      expect((await create(app, 'before the outage')).response.status).toBe(303);
      await stack.stopComponent('eventhubs');
      let during: Awaited<ReturnType<typeof create>>;
      try {
        during = await create(app, 'during the outage');
        expect(during.response.status).toBe(303);
      } finally {
        await stack.startComponent('eventhubs');
      }
      await app.waitForOutput(`task ${during.task?.id}: message to taskevents not sent:`);
      const after = await create(app, 'after the outage');
      // In memory, the restarted hub starts empty: only the message sent after the outage is there.
      expect((await hubEvents(1)).map(bodyText)).toEqual([JSON.stringify(after.task)]);
      expect(((await (await fetch(`${app.url}/api/tasks`)).json()) as Task[]).map((t) => t.title)).toEqual([
        'before the outage',
        'during the outage',
        'after the outage',
      ]);
    });
  });
});

describe.concurrent('no StreamHubConnection', () => {
  it("is the spec's placeholder: said once at start, each Create keeps its task and logs that nothing was sent", async () => {
    const app = await webApp({});
    expect(app.output()).toContain(
      'StreamHubConnection is not set: task messages are not sent (tasks are still kept)',
    );
    const { response, task } = await create(app, 'nowhere to send');
    expect(response.status).toBe(303);
    await app.waitForOutput(`task ${task?.id}: message not sent (StreamHubConnection is not set)`);
  });
});
