/**
 * Faults the event flows must survive (issue 8, items 4 and 8), on a whole persisted stack: a store
 * stopped for some seconds and started again with its data (Cosmos DB, Event Hubs, Azurite, the
 * functions host itself behind Event Grid), and a DocumentCreated event Event Grid refuses. Every event
 * written before, around or during an outage arrives exactly once after it; a refused event fails alone
 * and the log names it.
 */
import { randomUUID } from 'node:crypto';
import { EventHubProducerClient } from '@azure/event-hubs';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../emulators/core/testing.ts';
import { storedScanMark } from '../../emulators/functions-host/test/helpers.ts';
import { type AppStack, type LogEntry, startAppStack } from './test-support.ts';

/** Generous: they only bound a hang (retries back off from 2 s). */
const FLOW_MS = 90_000;
const TEST_MS = 240_000;

let app: AppStack;
beforeAll(async () => {
  app = await startAppStack({
    components: ['identity', 'blob', 'cosmos', 'keyvault', 'eventhubs', 'eventgrid', 'functions'],
    inMemory: false,
    // App settings, as an operator overrides host.json: the Event Hubs clients retry once, after 0.2 s,
    // instead of three times from 0.8 s (0.8, 2.4, 5.6 s), so an outage is noticed seconds sooner; and
    // load is balanced every 0.5 s instead of 2 s, which is also how long the host waits before it
    // restarts a processor whose receiver the outage ended.
    settings: {
      AzureFunctionsJobHost__extensions__eventHubs__clientRetryOptions__delay: '00:00:00.2',
      AzureFunctionsJobHost__extensions__eventHubs__clientRetryOptions__maximumRetries: '1',
      AzureFunctionsJobHost__extensions__eventHubs__loadBalancingUpdateInterval: '00:00:00.5',
    },
  });
  // The change feed flow runs beside the Azurite outage. Its one function called with a function key
  // has that key read from blob storage at its first call, as the runtime reads it; made here, before
  // any outage (a 400: no taskId), the call does not depend on which test comes first.
  expect((await fetch(app.url('managetask'))).status).toBe(400);
}, 60_000);
afterAll(async () => {
  await app?.stop();
});

const messages = (fn: string, prefix: string) =>
  app.logs().filter((e) => e.function === fn && e.message.startsWith(prefix));
/**
 * Waits until every expected line was logged, then checks none was logged twice. TaskCreatedNotification's
 * lines come through the change feed, whose polls the wait skips by moving the stack clock.
 */
async function eachOnce(fn: string, expected: string[]) {
  const wait = fn === 'TaskCreatedNotification' ? app.waitForFeed : app.waitForLogs;
  await wait((entries) => {
    const seen = new Set(entries.map((e) => e.message));
    return expected.every((line) => seen.has(line));
  }, FLOW_MS);
  const counts = new Map<string, number>();
  for (const { message } of app.logs().filter((e) => e.function === fn))
    counts.set(message, (counts.get(message) ?? 0) + 1);
  expect(expected.filter((line) => counts.get(line) !== 1)).toEqual([]);
}
/** The first host line (no function) at warning or error, logged after the first `mark` entries, that matches. */
const hostProblem = (mark: number, match: RegExp, viaFeed = false) =>
  logged(
    mark,
    (e) =>
      e.function === undefined && (e.level === 'warning' || e.level === 'error') && match.test(e.message),
    viaFeed,
  );
/**
 * The first entry after the first `mark` entries that matches; `viaFeed` when the change feed's next poll
 * brings it (the wait then skips the poll delay by moving the stack clock).
 */
async function logged(mark: number, match: (entry: LogEntry) => boolean, viaFeed = false) {
  const found = (entries: LogEntry[]) => entries.slice(mark).find(match);
  if (viaFeed) await app.waitForFeed((entries) => found(entries) !== undefined, FLOW_MS);
  return waitFor('a matching function log entry', () => found(app.logs()), FLOW_MS);
}

async function manageTasks(titles: string[]): Promise<string[]> {
  const lines: string[] = [];
  for (const Title of titles) {
    const response = await fetch(app.url('managetask'), {
      method: 'POST',
      body: JSON.stringify({ Title, Description: 'd', DueDate: null }),
    });
    expect(response.status).toBe(200);
    const { id } = (await response.json()) as { id: string };
    lines.push(`TaskCreatedNotification: task created: ${Title} (id ${id})`);
  }
  return lines;
}
/** Stops a component for `during`, then starts it again (also when `during` fails: the next test needs it). */
async function whileDown(name: string, during: () => Promise<unknown>) {
  await app.stack.stopComponent(name);
  try {
    await during();
  } finally {
    await app.stack.startComponent(name);
  }
}
/** Sends each body as one event to taskevents; answers the lines ProcessTaskEvents logs for them. */
async function send(bodies: string[]): Promise<string[]> {
  const producer = new EventHubProducerClient(
    app.stack.description.connections.StreamHubConnection ?? '',
    'taskevents',
  );
  try {
    for (const body of bodies) await producer.sendBatch([{ body }]);
  } finally {
    await producer.close();
  }
  return bodies.map((body) => `ProcessTaskEvents: message: ${body}`);
}
const titles = (label: string) => [1, 2, 3].map((n) => `${label} ${n} ${randomUUID()}`);

// Two flows that share no component run their outages side by side, each one outage after the other:
// Event Hubs with its checkpoints in blob storage, and beside it the blob trigger and the timer, whose
// stores are blob storage too (the Event Hubs outage, then Azurite's); and the change feed's flow, Cosmos DB
// and Event Grid (the Cosmos DB outage with the refused event beside it, then Event Grid's outage). The two
// chains take about as long: the Event Grid outage waits out the output binding's retries (~5.6 s, real
// time, no setting moves them), the Azurite one the host's storage retries (~3.2 s, the blob trigger
// settled first: scanMarkPast). The Event Hubs outage takes a few seconds however short it is: the
// processor's receivers notice the lost connection only when their retries (clientRetryOptions, set
// above) have failed. The host's outage touches both flows and comes after.
describe.concurrent('an Event Hubs outage, then an Azurite outage', () => {
  it.sequential(
    'the processor logs it, resumes after its checkpoints, and every event runs exactly once',
    async () => {
      const before = await send(titles('before the Event Hubs outage'));
      await eachOnce('ProcessTaskEvents', before);
      const mark = app.logs().length;
      await whileDown('eventhubs', () => hostProblem(mark, /^Event Hubs 'Functions\.ProcessTaskEvents'/));
      const after = await send(titles('after the Event Hubs outage'));
      await eachOnce('ProcessTaskEvents', [...before, ...after]);
      // The receiver the outage ended (the warning) was not left to the processor's own 30 s retry.
      await logged(
        mark,
        (e) =>
          e.function === undefined &&
          e.message ===
            "Event Hubs 'Functions.ProcessTaskEvents' restarts its processor: a partition's receiver ended",
      );
    },
    TEST_MS,
  );

  const createTasks = async (labels: string[], ids: string[] = []) => {
    const lines: string[] = [];
    for (const Title of labels) {
      const response = await fetch(app.url('createtask'), {
        method: 'POST',
        body: JSON.stringify({ Title, DueDate: null }),
      });
      expect(response.status).toBe(200);
      const task = (await response.json()) as { Id: string };
      ids.push(task.Id);
      lines.push(`ProcessTask: tasks/${task.Id}.json: ${JSON.stringify(task)}`);
    }
    return lines;
  };
  const checks = () => messages('CheckTasks', 'CheckTasks:').length;
  /**
   * Waits until the blob trigger has stored its scan mark past the blobs `ids` of tasks. Until then it
   * saves the mark at its 1 s ticks, and an Azurite stop that met a save held the trigger's next sweep,
   * so the outage's log, back by that save's storage retries (the log came ~3.6 s after the stop, or
   * ~7.5 s in some runs).
   */
  const scanMarkPast = async (ids: string[]) => {
    const { AzureWebJobsStorage = '', StorageConnection = '' } = app.stack.description.connections;
    const tasks = BlobServiceClient.fromConnectionString(StorageConnection).getContainerClient('tasks');
    const written = await Promise.all(
      ids.map(async (id) => (await tasks.getBlobClient(`${id}.json`).getProperties()).lastModified),
    );
    const newest = Math.max(...written.map((date) => date?.getTime() ?? 0));
    const hosts = BlobServiceClient.fromConnectionString(AzureWebJobsStorage);
    await waitFor(
      'the scan mark stored past the blobs',
      async () => (await storedScanMark(hosts, 'tasks')) > newest,
      FLOW_MS,
    );
  };

  it.sequential(
    'the blob trigger and the timer log it and carry on; every blob runs exactly once',
    async () => {
      const ids: string[] = [];
      const before = await createTasks(titles('before the Azurite outage'), ids);
      await eachOnce('ProcessTask', before);
      await scanMarkPast(ids);
      const mark = app.logs().length;
      const runs = checks();
      const during: string[] = [];
      // The three flows are watched at once: the shorter the outage, the less their retries have backed
      // off, and the sooner each resumes after it.
      await whileDown('blob', () =>
        Promise.all([
          hostProblem(mark, /^blob scan for 'Functions\.ProcessTask' failed/),
          (async () => {
            // The timer fires on the stack clock while its status store is down: it runs, and says why
            // the status was not saved.
            await app.stack.advanceClock(5 * 60_000);
            await app.waitForLogs(() => checks() > runs, FLOW_MS);
            await hostProblem(mark, /^timer CheckTasks: status not saved/);
          })(),
          (async () => {
            // Event Hubs is up: its events run while their checkpoints cannot be saved.
            during.push(...(await send(titles('during the Azurite outage'))));
            await eachOnce('ProcessTaskEvents', during);
          })(),
        ]),
      );
      const after = await createTasks(titles('after the Azurite outage'));
      await eachOnce('ProcessTask', [...before, ...after]);
      // Nothing runs again once the checkpoints can be saved.
      await eachOnce('ProcessTaskEvents', [...during, ...(await send(titles('after the Azurite outage')))]);
      await logged(mark, (e) => e.message === 'timer CheckTasks: status saved again');
      // The timer runs on after the outage. (Counted from here: the change feed's tests move the clock
      // too, so the timer may have run more than once during the outage.)
      const runsDuring = checks();
      await app.stack.advanceClock(5 * 60_000);
      await app.waitForLogs(() => checks() > runsDuring, FLOW_MS);
    },
    TEST_MS,
  );
});

describe.concurrent('outages of the change feed flow (beside the Event Hubs flow’s)', () => {
  // The refused event needs Event Grid and the host, not Cosmos DB (it is given to PublishDocumentCreated
  // directly), so it runs beside the Cosmos DB outage; the Event Grid outage comes after both.
  describe.concurrent('a Cosmos DB outage; beside it, a DocumentCreated event Event Grid refuses (over 1 MB)', () => {
    it(
      'the change feed logs it, resumes from its lease, and every task is notified exactly once',
      async () => {
        // Once a first task is notified, the change feed is known to be running.
        const first = await manageTasks(titles('first'));
        await eachOnce('TaskCreatedNotification', first);
        // Written just before the stop: the feed, waiting out its poll delay, reads them only after it.
        const before = await manageTasks(titles('before the Cosmos outage'));
        const mark = app.logs().length;
        await whileDown('cosmos', async () => {
          const outage = await hostProblem(mark, /^Lease 0 /, true);
          expect(outage.message).toMatch(/^Lease 0 experiencing transient connectivity issues\. /);
        });
        const after = await manageTasks(titles('after the Cosmos outage'));
        await eachOnce('TaskCreatedNotification', [...first, ...before, ...after]);
        expect(
          app
            .logs()
            .slice(mark)
            .map((e) => e.message),
        ).toContain('Lease 0 was acquired to start processing.');
      },
      TEST_MS,
    );

    it(
      'fails alone, named in the log with the topic’s answer; the other events of the batch are delivered',
      async () => {
        const big = { id: randomUUID(), Title: 'too big', Description: 'x'.repeat(1_100_000), DueDate: null };
        const small = { id: randomUUID(), Title: 'beside a big one', Description: null, DueDate: null };
        const response = await fetch(`${app.baseUrl}/admin/functions/PublishDocumentCreated`, {
          method: 'POST',
          headers: { 'x-functions-key': app.stack.description.masterKey, 'content-type': 'application/json' },
          body: JSON.stringify({ input: JSON.stringify([big, small]) }),
        });
        expect(response.status).toBe(202);
        await eachOnce('TaskCreatedNotification', [
          `TaskCreatedNotification: task created: beside a big one (id ${small.id})`,
        ]);
        const failure = await logged(
          0,
          (e) =>
            e.function === 'PublishDocumentCreated' &&
            e.message.startsWith('Exception while executing') &&
            e.message.includes(big.id),
        );
        expect(failure.message).toContain(
          `eventGrid output: 1 of 2 event(s) not published. Event subject /dbs/TasksDB/colls/Tasks/docs/${big.id}`,
        );
        expect(failure.message).toContain('413');
        expect(failure.message).toContain('The maximum size (1049600) has been exceeded.');
        expect(failure.message).not.toContain(small.id);
      },
      TEST_MS,
    );
  });

  describe.sequential('an Event Grid outage longer than the output binding’s retries', () => {
    it(
      'fails the invocation naming the task’s event (as in Azure, the lease moves on); later tasks flow again',
      async () => {
        const mark = app.logs().length;
        await whileDown('eventgrid', async () => {
          const [line] = await manageTasks([`while Event Grid is down ${randomUUID()}`]);
          const id = /\(id ([^)]+)\)$/.exec(line ?? '')?.[1];
          const failure = await logged(
            mark,
            (e) =>
              e.function === 'PublishDocumentCreated' && e.message.startsWith('Exception while executing'),
            true,
          );
          expect(failure.message).toMatch(
            new RegExp(
              `Exception: eventGrid output: 1 of 1 event\\(s\\) not published\\. Event subject /dbs/TasksDB/colls/Tasks/docs/${id} \\(id [0-9a-f-]+\\): fetch failed: connect ECONNREFUSED`,
            ),
          );
        });
        await eachOnce('TaskCreatedNotification', await manageTasks(titles('after the Event Grid outage')));
      },
      TEST_MS,
    );
  });
});

describe('a functions host outage behind Event Grid', () => {
  it(
    'Event Grid retries on its schedule (stack clock) and delivers once the host is back',
    async () => {
      const { TaskCreatedTopicEndpoint = '', TaskCreatedTopicKey = '' } = app.stack.description.connections;
      const id = randomUUID();
      const event = {
        id: randomUUID(),
        subject: `/dbs/TasksDB/colls/Tasks/docs/${id}`,
        eventType: 'Microsoft.DocumentDB.DocumentCreated',
        eventTime: new Date().toISOString(),
        dataVersion: '1.0',
        data: { id, Title: 'while the host was down', Description: null, DueDate: null },
      };
      interface Deliveries {
        attempts: { eventId: string; outcome: string }[];
        pending: { eventId: string }[];
      }
      const deliveries = () => app.stack.action('eventgrid', 'deliveries') as Promise<Deliveries>;
      await whileDown('functions', async () => {
        const published = await fetch(TaskCreatedTopicEndpoint, {
          method: 'POST',
          headers: { 'aeg-sas-key': TaskCreatedTopicKey, 'content-type': 'application/json' },
          body: JSON.stringify([event]),
        });
        expect(published.status).toBe(200);
        const failed = await waitFor(
          'the failed delivery',
          async () => (await deliveries()).attempts.find((a) => a.eventId === event.id),
          FLOW_MS,
        );
        expect(failed.outcome).not.toBe('Delivered');
      });
      // The first retry is due 10 s (stack time) after the failure.
      await app.stack.advanceClock(60_000);
      await eachOnce('TaskCreatedNotification', [
        `TaskCreatedNotification: task created: while the host was down (id ${id})`,
      ]);
      expect((await deliveries()).pending.filter((p) => p.eventId === event.id)).toEqual([]);
    },
    TEST_MS,
  );
});
