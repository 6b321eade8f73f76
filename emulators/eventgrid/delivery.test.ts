import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorContext, RunningEmulator } from '../core/emulator.ts';
import { startEmulator, testContext, testDataDir } from '../core/testing.ts';
import { topologySchema } from '../core/topology.ts';
import eventgrid from './index.ts';
import { actionsOf, startReceiver } from './testing.ts';

const TYPE = 'Microsoft.DocumentDB.DocumentCreated';
/** What the test's own WebHook subscription takes (the spec's subscription does not). */
const HOOK_TYPE = 'Taskstack.Test.Hooked';
const HOUR = 3_600_000;
/** Event Grid's retry waits, in seconds (written out: the test must not trust the code's own table). */
const SCHEDULE = [10, 30, 60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600];

const data = testDataDir();
let context: EmulatorContext;
let running: RunningEmulator;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

const start = async (functionsBaseUrl = receiver.baseUrl) => {
  running = await startEmulator(eventgrid, { port: 0, functionsBaseUrl }, context);
};

beforeAll(async () => {
  context = await testContext(data.dir);
  receiver = await startReceiver();
  // Next to the spec's AzureFunction subscription, a WebHook one (Event Grid schema) of the test's own.
  const topology = structuredClone(context.topology);
  topology.eventGrid.topics[0]?.subscriptions.push({
    name: 'hooksub',
    endpointType: 'WebHook',
    endpointUrl: `${receiver.baseUrl}/hook`,
    eventTypes: [HOOK_TYPE],
  });
  context.topology = topologySchema.parse(topology);
  await start();
});
afterAll(async () => {
  await running?.stop();
  await receiver?.stop();
  data.remove();
});

async function publish(id: string, eventType = TYPE) {
  const response = await fetch(running.endpoints.taskcreatedtopic as string, {
    method: 'POST',
    headers: { 'aeg-sas-key': context.secrets.eventGridKey, 'content-type': 'application/json' },
    body: JSON.stringify([
      { id, subject: `tasks/${id}`, eventType, eventTime: new Date().toISOString(), data: { id } },
    ]),
  });
  expect(response.status).toBe(200);
}

const attemptsOf = async (id: string) =>
  (await actionsOf(running).deliveries()).attempts.filter((a) => a.eventId === id);
const pendingOf = async (id: string) =>
  (await actionsOf(running).deliveries()).pending.find((p) => p.eventId === id);
const deadLetterOf = async (id: string) => (await actionsOf(running).deadLetters()).find((d) => d.id === id);
/** Answers `status` to deliveries of events whose id starts with `prefix`, 200 to the rest. */
const failing = (prefix: string, status: number) =>
  receiver.answerWith((r) => ((r.body as { id: string }[])[0]?.id.startsWith(prefix) ? status : 200));

describe('delivery to the function', () => {
  it('delivers only the event types the subscription lists', async () => {
    await publish('f-other', 'Microsoft.DocumentDB.DocumentDeleted');
    await publish('f-match', TYPE.toLowerCase());
    await expect.poll(() => receiver.deliveriesOf('f-match').length, { timeout: 60_000 }).toBe(1);
    expect(receiver.deliveriesOf('f-other')).toEqual([]);
    expect(await attemptsOf('f-other')).toEqual([]);
    expect(await pendingOf('f-other')).toBeUndefined();
  });

  it('retries a failed delivery once the stack clock passes the retry delay', async () => {
    failing('r-', 500);
    await publish('r-1');
    await expect.poll(() => attemptsOf('r-1'), { timeout: 60_000 }).toHaveLength(1);
    expect((await attemptsOf('r-1'))[0]).toMatchObject({
      deliveryCount: 0,
      status: 500,
      outcome: 'InternalServerError',
    });
    receiver.answerWith(() => 200);
    // Not before the delay …
    context.clock.advance(8000);
    expect(await pendingOf('r-1')).toMatchObject({ deliveryAttempts: 1 });
    expect(receiver.deliveriesOf('r-1')).toHaveLength(1);
    // … and at once after it.
    context.clock.advance(2000);
    await expect.poll(() => receiver.deliveriesOf('r-1').length, { timeout: 60_000 }).toBe(2);
    expect(receiver.deliveriesOf('r-1')[1]?.headers['aeg-delivery-count']).toBe('1');
    await expect.poll(() => pendingOf('r-1'), { timeout: 60_000 }).toBeUndefined();
    expect(await deadLetterOf('r-1')).toBeUndefined();
  });

  it('does not retry a 400: the event is dead-lettered at once', async () => {
    failing('n-', 400);
    await publish('n-1');
    await expect
      .poll(() => deadLetterOf('n-1'), { timeout: 60_000 })
      .toMatchObject({
        id: 'n-1',
        subscription: 'taskcreatedsub',
        deadLetterReason: 'MaxDeliveryAttemptsExceeded',
        deliveryAttempts: 1,
        lastDeliveryOutcome: 'BadRequest',
        lastHttpStatusCode: 400,
        eventType: TYPE,
      });
    expect(await pendingOf('n-1')).toBeUndefined();
    context.clock.advance(HOUR);
    expect(receiver.deliveriesOf('n-1')).toHaveLength(1);
  });

  it("does not retry a 401 from a WebHook, as Event Grid does not; a function endpoint's 401 is retried", async () => {
    failing('u-', 401);
    await publish('u-hook', HOOK_TYPE);
    await publish('u-function');
    await expect
      .poll(() => deadLetterOf('u-hook'), { timeout: 60_000 })
      .toMatchObject({
        subscription: 'hooksub',
        deadLetterReason: 'MaxDeliveryAttemptsExceeded',
        deliveryAttempts: 1,
        lastDeliveryOutcome: 'Unauthorized',
        lastHttpStatusCode: 401,
      });
    expect(receiver.deliveriesOf('u-hook')[0]?.url.pathname).toBe('/hook');
    expect(await pendingOf('u-hook')).toBeUndefined();
    // Azure resources (a function) are retried after a 401: only 400, 403 and 413 end their delivery.
    await expect
      .poll(() => pendingOf('u-function'), { timeout: 60_000 })
      .toMatchObject({ deliveryAttempts: 1 });
    expect(await deadLetterOf('u-function')).toBeUndefined();
    receiver.answerWith(() => 200);
    context.clock.advance(10_000);
    await expect.poll(() => pendingOf('u-function'), { timeout: 60_000 }).toBeUndefined();
    expect(receiver.deliveriesOf('u-function')).toHaveLength(2);
    expect(receiver.deliveriesOf('u-hook')).toHaveLength(1);
  });

  it("follows Event Grid's retry schedule, then dead-letters when the event's time to live is over", async () => {
    failing('d-', 503);
    await publish('d-1');
    const publishedAt = context.clock.now();
    const gaps: number[] = [];
    const settled = async () => (await attemptsOf('d-1')).length + ((await deadLetterOf('d-1')) ? 1 : 0);
    await expect.poll(settled, { timeout: 60_000 }).toBe(1);
    while (!(await deadLetterOf('d-1'))) {
      // Each attempt's outcome is recorded together with the time of the next one: move the clock there.
      const made = await settled();
      const wait = Date.parse((await pendingOf('d-1'))?.nextAttemptAt ?? '') - context.clock.now();
      gaps.push(Math.round(wait / 1000));
      context.clock.advance(Math.max(wait, 0));
      await expect.poll(settled, { timeout: 60_000 }).toBe(made + 1);
    }
    // 10 s, 30 s, 1 min, 5, 10, 30 min, 1, 3, 6 h, 12 h; then the wait runs into the 24 h expiry.
    expect(gaps.slice(0, SCHEDULE.length)).toEqual(SCHEDULE);
    expect(gaps).toHaveLength(SCHEDULE.length + 1);
    expect(receiver.deliveriesOf('d-1')).toHaveLength(SCHEDULE.length + 1);
    expect(receiver.deliveriesOf('d-1').map((r) => r.headers['aeg-delivery-count'])).toEqual(
      SCHEDULE.concat(0).map((_, i) => String(i)),
    );
    const dead = await deadLetterOf('d-1');
    expect(dead).toMatchObject({
      deadLetterReason: 'TimeToLiveExceeded',
      deliveryAttempts: SCHEDULE.length + 1,
      lastDeliveryOutcome: 'ServiceUnavailable',
      lastHttpStatusCode: 503,
    });
    expect(Date.parse(dead?.publishTime ?? '')).toBeGreaterThanOrEqual(publishedAt - 1000);
    expect(context.clock.now() - publishedAt).toBeGreaterThanOrEqual(24 * HOUR - 1000);
    expect(gaps.at(-1)).toBe(24 * 3600 - SCHEDULE.reduce((a, b) => a + b, 0));
  });

  it('keeps pending deliveries and dead letters across a restart, and resumes delivery', async () => {
    await running.stop();
    // The function host is down: the first attempt cannot connect.
    await start('http://127.0.0.1:9');
    await publish('p-1');
    await expect
      .poll(() => attemptsOf('p-1'), { timeout: 60_000 })
      .toMatchObject([{ outcome: 'GenericError' }]);
    await running.stop();

    receiver.answerWith(() => 200);
    await start();
    expect(await pendingOf('p-1')).toMatchObject({ deliveryAttempts: 1 });
    expect(await deadLetterOf('n-1')).toMatchObject({ deadLetterReason: 'MaxDeliveryAttemptsExceeded' });
    context.clock.advance(10_000);
    await expect.poll(() => receiver.deliveriesOf('p-1').length, { timeout: 60_000 }).toBe(1);
    expect(receiver.deliveriesOf('p-1')[0]?.headers['aeg-delivery-count']).toBe('1');
    await expect.poll(() => pendingOf('p-1'), { timeout: 60_000 }).toBeUndefined();
  });
});
