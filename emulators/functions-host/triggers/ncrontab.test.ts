/** NCRONTAB as the timer extension's NCrontab reads it, where cron-parser alone reads it otherwise. */
import { describe, expect, it } from 'vitest';
import { expanded, ncrontab } from './ncrontab.ts';
import { timerTrigger, timeZoneWarning, usesMonitor } from './timer.ts';
import { localTime, nextOccurrences } from './timer-log.ts';

const occurrences = (expression: string, from: string, count: number, zone = 'UTC') => {
  const next = ncrontab(expression, zone);
  if (!next) throw new Error(`refused: ${expression}`);
  const times: string[] = [];
  for (let at = Date.parse(from); times.length < count; ) {
    at = next(at);
    times.push(new Date(at).toISOString());
  }
  return times;
};

describe('NCRONTAB schedules', () => {
  it('needs the day in both day fields: the first Monday of a month, a Friday the 13th', () => {
    expect(occurrences('0 0 9 1-7 * 1', '2026-11-01T00:00:00Z', 3)).toEqual([
      '2026-11-02T09:00:00.000Z',
      '2026-12-07T09:00:00.000Z',
      '2027-01-04T09:00:00.000Z',
    ]);
    expect(occurrences('0 0 0 13 * Fri', '2026-11-14T00:00:00Z', 2)).toEqual([
      '2027-08-13T00:00:00.000Z',
      '2028-10-13T00:00:00.000Z',
    ]);
  });

  it('reads five fields as minutes first, at second 0, and one restricted day field as cron does', () => {
    expect(occurrences('*/5 * * * *', '2026-11-26T12:01:30Z', 2)).toEqual([
      '2026-11-26T12:05:00.000Z',
      '2026-11-26T12:10:00.000Z',
    ]);
    expect(occurrences('0 30 6 * * 0', '2026-11-26T00:00:00Z', 1)).toEqual(['2026-11-29T06:30:00.000Z']);
    expect(occurrences('0 0 0 1 * *', '2026-11-26T00:00:00Z', 1)).toEqual(['2026-12-01T00:00:00.000Z']);
  });

  it('takes any prefix of a month or day name, in any case', () => {
    const monday = ['2026-11-30T00:00:00.000Z'];
    for (const name of ['Monday', 'mon', 'MO', 'M']) {
      expect(occurrences(`0 0 0 * * ${name}`, '2026-11-26T00:00:00Z', 1), name).toEqual(monday);
    }
    expect(occurrences('0 0 0 1 dec *', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-12-01T00:00:00.000Z']);
  });

  it('reads a range written high to low, a step of 0 and a start with a step as NCrontab does', () => {
    // Fri-Mon is swapped to Monday to Friday, 5-1 to 1-5, 6-0 to every day.
    expect(occurrences('0 0 0 * * Fri-Mon', '2026-11-28T00:00:00Z', 1)).toEqual(['2026-11-30T00:00:00.000Z']);
    expect(expanded('0 5-1 * * * *')).toBe('0 1-5 * * * *');
    expect(expanded('0 0 0 * * 6-0')).toBe('0 0 0 * * *');
    // A step of 0 is a step of 1.
    expect(expanded('0 */0 * * * *')).toBe('0 * * * * *');
    // 1/2 runs Monday to Saturday, never Sunday (cron-parser ran it to 7, a Sunday).
    expect(occurrences('0 0 0 * * 1/2', '2026-11-28T00:00:00Z', 1)).toEqual(['2026-11-30T00:00:00.000Z']);
    expect(expanded('0 0 0 * * 1/3')).toBe('0 0 0 * * 1,4');
  });

  it('refuses what NCrontab does not know: ? L W #, day of week 7, unknown names, other field counts', () => {
    for (const expression of [
      '0 0 0 ? * *',
      '0 0 0 L * *',
      '0 0 0 1W * *',
      '0 0 0 * * 1#2',
      '0 0 0 * * 7',
      '0 0 0 * * Funday',
      '0 0 24 * * *',
      '0 0 0 * *  * *',
      '* * * *',
      '0 0 0 * * */Mon',
      '0 1,,2 * * * *',
      '0 1- * * * *',
    ]) {
      expect(ncrontab(expression, 'UTC'), expression).toBeUndefined();
    }
  });

  it('writes a schedule expanded as CrontabSchedule.ToString() does: runs, *, numbers for names', () => {
    expect(expanded('0 */15 * * * *')).toBe('0 0,15,30,45 * * * *');
    expect(expanded('0 30 9 * Jan,Feb,Mar Mon-Fri')).toBe('0 30 9 * 1-3 1-5');
    expect(expanded('0 0 12 * * 5,6,0')).toBe('0 0 12 * * 0,5-6');
    expect(expanded('0 0 0 * * 0-6')).toBe('0 0 0 * * *');
    expect(expanded('*/30 9 * * 1')).toBe('0,30 9 * * 1');
  });

  it("lists the next 5 occurrences on the zone's wall clock, then in UTC, as the extension logs them", () => {
    const schedule = Object.assign(ncrontab('0 0 9 * * *', 'America/New_York') as (at: number) => number, {
      text: "Cron: '0 0 9 * * *'",
    });
    const lines = nextOccurrences(
      'Functions.x',
      schedule,
      Date.parse('2027-03-12T00:00:00Z'),
      'America/New_York',
    );
    expect(lines.split('\n').slice(0, 4)).toEqual([
      "The next 5 occurrences of the 'Functions.x' schedule (Cron: '0 0 9 * * *') will be:",
      '03/12/2027 09:00:00-05:00 (03/12/2027 14:00:00Z)',
      '03/13/2027 09:00:00-05:00 (03/13/2027 14:00:00Z)',
      '03/14/2027 09:00:00-04:00 (03/14/2027 13:00:00Z)',
    ]);
  });

  it('writes times as .NET writes a local DateTime: "o" in full, Newtonsoft.Json trimmed, with the offset', () => {
    const at = Date.parse('2027-03-14T13:00:00.120Z');
    expect(localTime(at, undefined, false)).toBe('2027-03-14T13:00:00.1200000+00:00');
    expect(localTime(at, undefined, true)).toBe('2027-03-14T13:00:00.12+00:00');
    expect(localTime(at - 120, 'America/New_York', true)).toBe('2027-03-14T09:00:00-04:00');
  });

  it('counts in the time zone it is given', () => {
    expect(occurrences('0 0 9 * * *', '2026-11-26T00:00:00Z', 1, 'America/New_York')).toEqual([
      '2026-11-26T14:00:00.000Z',
    ]);
  });
});

describe('the timer trigger as the extension indexes it', () => {
  const index = (settings: Record<string, string>, schedule: string) =>
    timerTrigger.index?.(settings, { type: 'timerTrigger', name: 'timer', direction: 'in', schedule });

  it('refuses a WEBSITE_TIME_ZONE that is no IANA name, saying so (not a schedule error)', () => {
    expect(() => index({ WEBSITE_TIME_ZONE: 'Eastern Standard Time' }, '0 0 9 * * *')).toThrow(
      "WEBSITE_TIME_ZONE 'Eastern Standard Time' is no IANA time zone (such as America/New_York)",
    );
    expect(() => index({ WEBSITE_TIME_ZONE: 'America/New_York' }, '0 0 9 * * *')).not.toThrow();
  });
});

describe('WEBSITE_TIME_ZONE on the Consumption plan', () => {
  it('is warned of at start, as Azure does not support it on Linux in a Consumption plan', () => {
    const zone = { WEBSITE_TIME_ZONE: 'America/New_York' };
    expect(timeZoneWarning({ ...zone, WEBSITE_SKU: 'Dynamic' }, 'CheckTasks')).toBe(
      "timer CheckTasks: WEBSITE_TIME_ZONE 'America/New_York' is not supported on Linux in a Consumption plan (WEBSITE_SKU Dynamic) in Azure; this host schedules in it all the same",
    );
    expect(timeZoneWarning({ ...zone, WEBSITE_SKU: 'ElasticPremium' }, 'CheckTasks')).toBeUndefined();
    expect(timeZoneWarning({ WEBSITE_SKU: 'Dynamic' }, 'CheckTasks')).toBeUndefined();
  });
});

describe('the schedule monitor', () => {
  const monitored = (schedule: string, useMonitor?: boolean) =>
    usesMonitor({}, { type: 'timerTrigger', name: 'timer', direction: 'in', schedule, useMonitor });

  it('is off for a schedule that fires more than once a minute, as TimerSchedule.Create turns it off', () => {
    for (const schedule of ['*/10 * * * * *', '0,30 * * * * *', '* * * * * *', '00:00:30', '00:00:59.5'])
      expect(monitored(schedule), schedule).toBe(false);
  });

  it('is on for a minute or more, when a field besides the seconds is restricted, and with five fields', () => {
    for (const schedule of [
      '0 * * * * *',
      '*/10 5 * * * *',
      '* * * * 1-5',
      '*/10 * * * * 1-5',
      '0 */5 * * * *',
    ])
      expect(monitored(schedule), schedule).toBe(true);
    expect(monitored('* * * * *')).toBe(true);
    expect(monitored('00:01:00')).toBe(true);
    expect(monitored('0 */5 * * * *', false)).toBe(false);
  });
});
