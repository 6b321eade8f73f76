/** The timer trigger on the stack clock, with its schedule status in Azurite across restarts. */
import { join } from 'node:path';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testContext, testDataDir, waitFor } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import { downloadBlob } from './connections.ts';
import { hostIdOf, readLog, startCjsHostOnBlob } from './test/helpers.ts';

const FIVE_MINUTES = 5 * 60_000;
const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let blob: ComponentUnderTest;
let host: ComponentUnderTest;
let storage: BlobServiceClient;
let statusPath: string;
let masterKey: string;

interface ScheduleStatus {
  Last: string;
  Next: string;
  LastUpdated: string;
}

const ticks = (pastDue: boolean) =>
  readLog(logFile).filter((e) => e.message.startsWith(`tick isPastDue=${pastDue}`));
const readStatus = async () =>
  JSON.parse(
    (
      await downloadBlob(storage.getContainerClient('azure-webjobs-hosts').getBlobClient(statusPath))
    ).content.toString(),
  ) as ScheduleStatus;

beforeAll(async () => {
  const started = await startCjsHostOnBlob(data.dir, logFile);
  ({ blob, host } = started);
  storage = BlobServiceClient.fromConnectionString(started.connectionString);
  masterKey = (await testContext(data.dir)).secrets.masterKey;
  statusPath = `timers/${await hostIdOf(host, masterKey)}/Host.Functions.tick/status`;
});

afterAll(async () => {
  await host?.stop();
  await blob?.stop();
  data.remove();
});

describe('timer trigger (0 */5 * * * *)', () => {
  it('records its schedule status at start: the next five-minute boundary', async () => {
    const status = await waitFor('the status blob', () => readStatus().catch(() => undefined));
    const next = Date.parse(status.Next);
    expect(next % FIVE_MINUTES).toBe(0);
    expect(next).toBeGreaterThan(Date.parse(status.LastUpdated));
    expect(next - Date.parse(status.LastUpdated)).toBeLessThanOrEqual(FIVE_MINUTES);
    // As Newtonsoft.Json writes the runtime's local DateTimes (UTC in Azure): an offset, no `Z`, no
    // trailing zeros in the fraction.
    expect(status.Next).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d[05]:00\+00:00$/);
    expect(status.Last).toBe('0001-01-01T00:00:00+00:00');
    expect(status.LastUpdated).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?\+00:00$/);
  });

  it("logs the extension's start line: the next 5 occurrences, the schedule as NCrontab writes it", async () => {
    const status = await waitFor('the status blob', () => readStatus().catch(() => undefined));
    const line = await waitFor('the start line', () =>
      readLog(logFile).find((e) => e.message.includes("of the 'Functions.tick' schedule")),
    );
    const minutes = Array.from({ length: 12 }, (_, i) => i * 5).join(',');
    const [head, ...times] = line.message.split('\n');
    expect(head).toBe(
      `The next 5 occurrences of the 'Functions.tick' schedule (Cron: '0 ${minutes} * * * *') will be:`,
    );
    // Each line ends with a newline, as StringBuilder.AppendLine ends it.
    expect(times.pop()).toBe('');
    const utc = (ms: number) =>
      new Date(ms).toISOString().replace(/^(\d{4})-(\d\d)-(\d\d)T(\d\d:\d\d:\d\d).*$/, '$2/$3/$1 $4Z');
    const next = Date.parse(status.Next);
    expect(times).toEqual([0, 1, 2, 3, 4].map((i) => utc(next + i * FIVE_MINUTES)));
  });

  it("hands a first runOnStartup run the listener's own status: never run, never updated, next at its schedule", async () => {
    const startups = () => readLog(logFile).filter((e) => e.message.startsWith('startup '));
    const run = await waitFor('the startup run', () => startups()[0]);
    const [, pastDue, json] = /^startup isPastDue=(\w+) status=(.*)$/.exec(run.message) ?? [];
    expect(pastDue).toBe('false');
    const status = JSON.parse(json ?? 'null') as { last: string; next: string; lastUpdated: string };
    // TimerListener's status when none was recorded (CheckPastDueAsync records one, but does not hand it).
    expect(status.last).toBe('0001-01-01T00:00:00+00:00');
    expect(status.lastUpdated).toBe('0001-01-01T00:00:00+00:00');
    expect(status.next).toMatch(/^\d{4}-01-01T00:00:00\+00:00$/);
    const next = new Date(status.next);
    expect([next.getUTCMonth(), next.getUTCDate(), next.getUTCHours(), next.getUTCMinutes()]).toEqual([
      0, 1, 0, 0,
    ]);
    expect(startups()).toHaveLength(1);
    // The line the WebJobs SDK logs after Executing for a run off the schedule.
    const details = readLog(logFile).filter(
      (e) => e.invocationId === run.invocationId && e.message.startsWith('Trigger Details: '),
    );
    expect(details.map((e) => e.message)).toEqual([
      'Trigger Details: UnscheduledInvocationReason: RunOnStartup',
    ]);
  });

  it('fires when the stack clock moves five minutes, and records Last/Next', async () => {
    const before = await readStatus();
    await host.advanceClock(FIVE_MINUTES);
    const tick = await waitFor('the scheduled run', () => ticks(false)[0]);
    expect(tick.function).toBe('tick');
    expect(readLog(logFile).find((e) => e.invocationId === tick.invocationId)?.message).toMatch(
      /^Executing 'Functions\.tick' \(Reason='Timer fired at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}\+00:00', Id=/,
    );
    const after = await waitFor('the updated status', async () => {
      const status = await readStatus();
      return status.LastUpdated !== before.LastUpdated && status;
    });
    // As the runtime records a run: Last is when it ran (the clock's move made it late), Next the first
    // occurrence after that.
    const [last, next] = [Date.parse(after.Last), Date.parse(after.Next)];
    expect(last).toBeGreaterThanOrEqual(Date.parse(before.Next));
    expect(after.LastUpdated).toBe(after.Last);
    expect(next % FIVE_MINUTES).toBe(0);
    expect(next - last).toBeGreaterThan(0);
    expect(next - last).toBeLessThanOrEqual(FIVE_MINUTES);
  });

  it('runs a missed occurrence once with isPastDue after a restart', async () => {
    await host.stop();
    await host.advanceClock(2 * FIVE_MINUTES);
    expect(ticks(true)).toHaveLength(0);
    const missed = (await readStatus()).Next;
    await host.start();
    const late = await waitFor('the past-due run', () => ticks(true)[0]);
    const details = readLog(logFile).find(
      (e) => e.invocationId === late.invocationId && e.message.startsWith('Trigger Details: '),
    );
    // The occurrence missed as "o" writes it (with seven digits) and the reason, as TimerListener gives them.
    expect(details?.message).toBe(
      `Trigger Details: UnscheduledInvocationReason: IsPastDue, OriginalSchedule: ${missed.replace('+00:00', '.0000000+00:00')}`,
    );
    expect(late.message).toMatch(/last=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?\+00:00$/);
    const status = await waitFor('the status after the past-due run', async () => {
      const current = await readStatus();
      return Date.parse(current.Next) > Date.parse(current.LastUpdated) && current;
    });
    expect(Date.parse(status.Next) % FIVE_MINUTES).toBe(0);
    expect(ticks(true)).toHaveLength(1);
  });

  it('takes a recorded Next its schedule no longer gives for a schedule change, not for a missed run', async () => {
    await host.stop();
    // As a one-minute schedule would have left it: one minute after a run, long past (the stack clock
    // runs ahead of real time after the moves above).
    const last = Math.floor(Date.now() / FIVE_MINUTES) * FIVE_MINUTES - 2 * FIVE_MINUTES;
    const changed = {
      Last: new Date(last).toISOString(),
      Next: new Date(last + 60_000).toISOString(),
      LastUpdated: new Date(last).toISOString(),
    };
    const text = JSON.stringify(changed);
    await storage
      .getContainerClient('azure-webjobs-hosts')
      .getBlockBlobClient(statusPath)
      .upload(text, text.length);
    const pastDueRuns = ticks(true).length;
    await host.start();
    // The runtime's answer to a changed schedule: no run, Last forgotten, Next counted from now.
    const restarted = await waitFor('the status rewritten for the new schedule', async () => {
      const status = await readStatus();
      return status.Last === '0001-01-01T00:00:00+00:00' && status;
    });
    expect(Date.parse(restarted.Next) % FIVE_MINUTES).toBe(0);
    expect(Date.parse(restarted.Next)).toBeGreaterThan(Date.parse(restarted.LastUpdated));
    // Runs never overlap: a past-due run made at the start would come before this scheduled one.
    const scheduled = ticks(false).length;
    await host.advanceClock(FIVE_MINUTES);
    await waitFor('the next scheduled run', () => ticks(false).length > scheduled);
    expect(ticks(true)).toHaveLength(pastDueRuns);
  });

  it('runs by hand through the admin API (202)', async () => {
    const manual = ticks(false).length;
    const response = await fetch(`${host.endpoints.baseUrl}/admin/functions/tick`, {
      method: 'POST',
      headers: { 'x-functions-key': masterKey },
      body: '{"input":""}',
    });
    expect(response.status).toBe(202);
    await waitFor('the manual run', () => ticks(false).length > manual);
  });
});
