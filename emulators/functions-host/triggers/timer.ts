/**
 * timerTrigger on the stack clock: NCRONTAB schedules (`ncrontab.ts`) or `hh:mm:ss` intervals, runOnStartup, and the runtime's schedule monitor — status
 * `{Last, Next, LastUpdated}` in `azure-webjobs-hosts/timers/<hostId>/Host.Functions.<name>/status` of
 * AzureWebJobsStorage, so that after a restart a missed occurrence runs once with `isPastDue`. An outage
 * of that storage never stops the timer: it fires on, and the status is saved again once storage is back.
 */
import {
  blobService,
  downloadBlob,
  isNotFound,
  resolveSettingReferences,
  type Settings,
} from '../connections.ts';
import type { RegisteredFunction } from '../core-api.ts';
import { type Host, IndexingError, type Listener, type TriggerBinding, type TriggerKind } from '../host.ts';
import type { TriggerInput } from '../invoke.ts';
import { Outage, Pauses } from '../listeners.ts';
import { invokeWithRetries } from '../retry.ts';
import { parseTimeSpan, timeSpan } from '../timespan.ts';
import { expanded, ncrontab, subMinute } from './ncrontab.ts';
import { localTime, nextOccurrences, type Schedule } from './timer-log.ts';

interface ScheduleStatus {
  Last: string;
  Next: string;
  LastUpdated: string;
}

/** The extension's own words for a schedule it cannot read (TimerSchedule.Create), at indexing. */
const unrecognized = (expression: string) =>
  new IndexingError(
    `The schedule expression '${expression}' was not recognized as a valid cron expression or timespan string.`,
    'Microsoft.Azure.WebJobs.Extensions',
  );

function parseSchedule(expression: string, timeZone: string | undefined): Schedule {
  const interval = parseTimeSpan(expression);
  if (interval !== undefined) {
    // The runtime takes a zero TimeSpan and fires without pause; this host refuses it.
    if (interval <= 0) throw new IndexingError(`timer schedule '${expression}' must be a positive interval`);
    return Object.assign((after: number) => after + interval, { text: `Constant: ${timeSpan(interval)}` });
  }
  const zone = timeZone ?? 'UTC';
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
  } catch {
    throw new IndexingError(`WEBSITE_TIME_ZONE '${zone}' is no IANA time zone (such as America/New_York)`);
  }
  const schedule = ncrontab(expression, zone);
  if (!schedule) throw unrecognized(expression);
  return Object.assign(schedule, { text: `Cron: '${expanded(expression)}'` });
}

/**
 * Microsoft documents WEBSITE_TIME_ZONE (and TZ) as not supported on Linux in a Consumption plan (they "can
 * create SSL-related issues and cause metrics to stop working"); this host follows the zone all the
 * same, so a timer says so at start rather than let a local run promise what Azure does not.
 */
export function timeZoneWarning(settings: Settings, name: string): string | undefined {
  const zone = settings.WEBSITE_TIME_ZONE;
  if (settings.WEBSITE_SKU !== 'Dynamic' || !zone) return undefined;
  return `timer ${name}: WEBSITE_TIME_ZONE '${zone}' is not supported on Linux in a Consumption plan (WEBSITE_SKU Dynamic) in Azure; this host schedules in it all the same`;
}

const expressionOf = (settings: Settings, trigger: TriggerBinding) =>
  resolveSettingReferences(String(trigger.schedule ?? ''), settings);

/** The schedule as the extension reads it at indexing: `%Setting%` resolved, then NCRONTAB or TimeSpan. */
function scheduleOf(settings: Settings, trigger: TriggerBinding): Schedule {
  return parseSchedule(expressionOf(settings, trigger), settings.WEBSITE_TIME_ZONE);
}

/**
 * Whether the schedule monitor keeps a status, as TimerSchedule.Create decides: `useMonitor` (true by
 * default), turned off for a schedule that fires more than once a minute (a TimeSpan under a minute,
 * every ten seconds). Without it the function gets no status and a missed occurrence is not run.
 */
export function usesMonitor(settings: Settings, trigger: TriggerBinding): boolean {
  if (trigger.useMonitor === false) return false;
  const expression = expressionOf(settings, trigger);
  const interval = parseTimeSpan(expression);
  return interval === undefined ? !subMinute(expression) : interval >= 60_000;
}

/** .NET's DateTime.MinValue as local time in UTC: the runtime's `Last` before any run. */
const NEVER = '0001-01-01T00:00:00+00:00';
/** A recorded time past this one is a real time, not MinValue (the runtime's DefaultDateTimeThreshold). */
const RECORDED = Date.parse('0001-01-02T00:00:00.000Z');

/**
 * The status the timer starts from, as the runtime's schedule monitor checks it (`CheckPastDueAsync`):
 * none yet is recorded now; a `Next` that the schedule no longer gives (the schedule changed while the
 * host was down) is replaced, counted from `Last` (else `LastUpdated`), or from now if that is past, so
 * a changed schedule is not taken for a missed occurrence. `handed` is what the listener hands its runs
 * until the first is recorded: on a first start not the status recorded but its own, never updated.
 */
function startingStatus(
  stored: ScheduleStatus | undefined,
  schedule: Schedule,
  now: number,
  stamp: (ms: number) => string,
) {
  if (!stored) {
    const next = stamp(schedule(now));
    const status = { Last: NEVER, Next: next, LastUpdated: stamp(now) };
    return { status, handed: { ...status, LastUpdated: NEVER }, changed: true };
  }
  const last = Date.parse(stored.Last);
  const updated = Date.parse(stored.LastUpdated);
  const basis = last > RECORDED ? last : updated > RECORDED ? updated : now;
  let expected = schedule(basis);
  if (Date.parse(stored.Next) === expected) return { status: stored, handed: stored, changed: false };
  const from = now > expected ? now : basis;
  if (now > expected) expected = schedule(now);
  const status = { Last: NEVER, Next: stamp(expected), LastUpdated: stamp(from) };
  return { status, handed: status, changed: true };
}
const REASON_ADMIN = 'This function was programmatically called via the host APIs.';

function timerInput(
  trigger: TriggerBinding,
  status: ScheduleStatus | undefined,
  isPastDue: boolean,
  reason: string,
): TriggerInput {
  const timer = { Schedule: { AdjustForDST: true }, ScheduleStatus: status ?? null, IsPastDue: isPastDue };
  return { inputData: [{ name: trigger.name, data: { json: JSON.stringify(timer) } }], reason };
}

class ScheduleMonitor {
  constructor(
    private readonly host: Host,
    private readonly fn: RegisteredFunction,
  ) {}

  #blob() {
    const container = blobService(this.host.settings, undefined).getContainerClient('azure-webjobs-hosts');
    return {
      container,
      blob: container.getBlockBlobClient(`timers/${this.host.hostId}/Host.Functions.${this.fn.name}/status`),
    };
  }

  async read(): Promise<ScheduleStatus | undefined> {
    try {
      return JSON.parse((await downloadBlob(this.#blob().blob)).content.toString('utf8')) as ScheduleStatus;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async write(status: ScheduleStatus): Promise<void> {
    const { container, blob } = this.#blob();
    const text = JSON.stringify(status);
    try {
      await blob.upload(text, Buffer.byteLength(text));
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await container.createIfNotExists();
      await blob.upload(text, Buffer.byteLength(text));
    }
  }
}

async function listen(host: Host, fn: RegisteredFunction, trigger: TriggerBinding): Promise<Listener> {
  const schedule = scheduleOf(host.settings, trigger);
  const monitor = usesMonitor(host.settings, trigger) ? new ScheduleMonitor(host, fn) : undefined;
  const clock = host.clock;
  const stamp = (ms: number) => localTime(ms, host.settings.WEBSITE_TIME_ZONE, true);
  let status = await monitor?.read();
  let cancel = () => {};
  let stopped = false;
  const pauses = new Pauses();
  let running: Promise<unknown> = Promise.resolve();

  // An outage of the status store does not stop the timer: the status is saved again with backoff (the
  // latest one), and a host restarted meanwhile at worst runs a missed occurrence with isPastDue.
  const outage = new Outage({
    down: (error, failures, retryInMs) =>
      host.logs.host(
        'error',
        `timer ${fn.name}: status not saved: ${error.message} (retry ${failures} in ${Math.round(retryInMs / 1000)} s)`,
      ),
    up: () => host.logs.host('information', `timer ${fn.name}: status saved again`),
  });
  let retry: NodeJS.Timeout | undefined;
  let saving: Promise<void> = Promise.resolve();
  const save = (latest: ScheduleStatus) => {
    clearTimeout(retry);
    saving = (monitor as ScheduleMonitor).write(latest).then(
      () => outage.recovered(),
      (error: Error) => {
        const delay = outage.failed(error);
        if (!stopped) retry = setTimeout(() => status && save(status), delay);
      },
    );
    return saving;
  };
  /**
   * Runs one occurrence (the trigger's singleton: occurrences never overlap), then records it as the
   * runtime does: `Last` is when it ran, or its scheduled time when a scheduled run came early.
   */
  const fire = (scheduled: boolean, isPastDue: boolean) => {
    running = running.then(async () => {
      const invoked = clock.now();
      const zone = host.settings.WEBSITE_TIME_ZONE;
      const input = timerInput(
        trigger,
        status,
        isPastDue,
        `Timer fired at ${localTime(invoked, zone, false)}`,
      );
      // TimerListener's details of a run off the schedule: past due (with the occurrence missed) or at start.
      if (isPastDue && status) {
        const original = localTime(Date.parse(status.Next), zone, false);
        input.triggerDetails = { UnscheduledInvocationReason: 'IsPastDue', OriginalSchedule: original };
      } else if (!scheduled) input.triggerDetails = { UnscheduledInvocationReason: 'RunOnStartup' };
      await invokeWithRetries(host, fn, input, pauses);
      if (!monitor || !status) return;
      const next = Date.parse(status.Next);
      const last = scheduled && next > invoked ? next : invoked;
      status = { Last: stamp(last), Next: stamp(schedule(last)), LastUpdated: stamp(last) };
      await save(status);
    });
    return running;
  };
  const arm = () => {
    if (stopped) return;
    cancel = clock.at(schedule(clock.now()), () => void fire(true, false).then(arm));
  };

  const now = clock.now();
  let pastDue = false;
  if (monitor) {
    const start = startingStatus(status, schedule, now, stamp);
    status = start.handed;
    if (start.changed) await save(start.status);
    pastDue = now > Date.parse(status.Next);
  }
  const zoneWarning = timeZoneWarning(host.settings, fn.name);
  if (zoneWarning) host.logs.host('warning', zoneWarning);
  host.logs.host(
    'information',
    nextOccurrences(`Functions.${fn.name}`, schedule, now, host.settings.WEBSITE_TIME_ZONE),
  );
  if (pastDue) void fire(false, true);
  else if (trigger.runOnStartup === true) void fire(false, false);
  arm();

  return {
    async stop() {
      stopped = true;
      pauses.stop();
      cancel();
      clearTimeout(retry);
      await running;
      await saving;
    },
  };
}

export const timerTrigger: TriggerKind = {
  type: 'timerTrigger',
  listen,
  index: scheduleOf,
  async adminInput(host, fn, trigger) {
    const monitored = usesMonitor(host.settings, trigger);
    const status = monitored ? await new ScheduleMonitor(host, fn).read() : undefined;
    return timerInput(trigger, status, false, REASON_ADMIN);
  },
};
