/** .NET's TimeSpan, as host.json settings and timer schedules write it. */

/**
 * Parses a TimeSpan as .NET's TimeSpan.Parse reads it (invariant culture), as host.json and timer
 * schedules are read: `d` (days), `[d.]hh:mm[:ss[.fffffff]]`, `d:hh:mm:ss[.fffffff]`; hours 0-23,
 * minutes and seconds 0-59. Three numbers whose first is no hour are days, hours and minutes, as .NET
 * falls back to them: `24:00:00` is 24 days, not a day. Undefined when .NET would refuse it.
 */
export function parseTimeSpan(text: string): number | undefined {
  const value = text.trim();
  const part = (digits: string | undefined, max = Number.POSITIVE_INFINITY) =>
    digits === undefined ? 0 : Number(digits) <= max ? Number(digits) : Number.NaN;
  const ms = (days: number, hours: number, minutes: number, seconds: number, fraction = '0') => {
    const total = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000;
    return Number.isNaN(total) ? undefined : total + Math.round(Number(`0.${fraction}`) * 1000);
  };
  if (/^\d+$/.test(value)) return ms(Number(value), 0, 0, 0);
  const four = /^(\d+):(\d+):(\d+):(\d+)(?:\.(\d{1,7}))?$/.exec(value);
  if (four) return ms(part(four[1]), part(four[2], 23), part(four[3], 59), part(four[4], 59), four[5]);
  const match = /^(?:(\d+)\.)?(\d+):(\d+)(?::(\d+)(?:\.(\d{1,7}))?)?$/.exec(value);
  if (!match) return undefined;
  const [, days, hours = '', minutes = '', seconds, fraction] = match;
  if (days === undefined && seconds !== undefined && fraction === undefined && Number(hours) > 23)
    return ms(part(hours), part(minutes, 23), part(seconds, 59), 0);
  return ms(part(days), part(hours, 23), part(minutes, 59), part(seconds, 59), fraction);
}

/** .NET's TimeSpan.ToString() ("c"): `[d.]hh:mm:ss[.fffffff]`. */
export function timeSpan(delayMs: number): string {
  const ticks = Math.round(delayMs * 10_000);
  const days = Math.floor(ticks / 864e9);
  const clock = new Date(Math.floor((ticks % 864e9) / 1e4)).toISOString().slice(11, 19);
  const fraction = ticks % 1e7;
  return `${days ? `${days}.` : ''}${clock}${fraction ? `.${String(fraction).padStart(7, '0')}` : ''}`;
}
