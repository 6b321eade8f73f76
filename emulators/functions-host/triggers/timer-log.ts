/** Times as the timer extension writes them: its start line (TimerListener's NextOccurrences), TimerInfo's. */

/**
 * Returns the first occurrence strictly after `after` (ms); `text` names it as the extension's
 * TimerSchedule.ToString() does (`Cron: '…'`, `Constant: 00:05:00`).
 */
export type Schedule = ((after: number) => number) & { text: string };

const two = (n: number) => String(n).padStart(2, '0');

/** The wall clock of `zone` at `ms` (its parts), and that clock's offset from UTC in minutes. */
function wallClock(ms: number, zone: string) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(ms)
      .map((part) => [part.type, part.value]),
  );
  const [y, mo, d, h, mi, s] = ['year', 'month', 'day', 'hour', 'minute', 'second'].map((type) =>
    Number(parts[type]),
  ) as [number, number, number, number, number, number];
  const offset = Math.round((Date.UTC(y, mo - 1, d, h, mi, s) - Math.floor(ms / 1000) * 1000) / 60_000);
  const sign = offset < 0 ? '-' : '+';
  const zoneText = `${sign}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
  return { y, mo, d, h, mi, s, zoneText };
}

/** `MM/dd/yyyy HH:mm:ssK` of .NET, K being `Z` in UTC, else the offset (`-05:00`). */
function dotNetTime(ms: number, zone: string): string {
  const { y, mo, d, h, mi, s, zoneText } = wallClock(ms, zone);
  return `${two(mo)}/${two(d)}/${y} ${two(h)}:${two(mi)}:${two(s)}${zone === 'UTC' ? 'Z' : zoneText}`;
}

/**
 * A local DateTime as .NET writes it with its offset (the host's clock is the zone's, UTC in Azure by
 * default): `"o"` (`2026-11-26T17:05:00.0120000+00:00`, the invocation's reason), or `trimmed` as
 * Newtonsoft.Json writes one (`2026-11-26T17:05:00.012+00:00`, `…:00+00:00`: the TimerInfo handed to the
 * worker and the status blob).
 */
export function localTime(ms: number, timeZone: string | undefined, trimmed: boolean): string {
  const { y, mo, d, h, mi, s, zoneText } = wallClock(ms, timeZone ?? 'UTC');
  const digits = `${String(((ms % 1000) + 1000) % 1000).padStart(3, '0')}0000`;
  const fraction = trimmed ? digits.replace(/0+$/, '') : digits;
  const date = `${String(y).padStart(4, '0')}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}:${two(s)}`;
  return `${date}${fraction ? `.${fraction}` : ''}${zoneText}`;
}

/**
 * `The next 5 occurrences of the 'Functions.X' schedule (Cron: '…') will be:` and one line per
 * occurrence after `now`, each ended by a newline: in UTC `11/26/2026 17:05:00Z`, in another zone
 * (WEBSITE_TIME_ZONE) its wall clock then UTC, `11/26/2026 12:05:00-05:00 (11/26/2026 17:05:00Z)`.
 */
export function nextOccurrences(
  logName: string,
  schedule: Schedule,
  now: number,
  timeZone: string | undefined,
): string {
  const zone = new Intl.DateTimeFormat('en', { timeZone: timeZone ?? 'UTC' }).resolvedOptions().timeZone;
  const lines: string[] = [];
  for (let at = now, count = 0; count < 5; count++) {
    at = schedule(at);
    const utc = dotNetTime(at, 'UTC');
    lines.push(zone === 'UTC' ? utc : `${dotNetTime(at, zone)} (${utc})`);
  }
  return `The next 5 occurrences of the '${logName}' schedule (${schedule.text}) will be:\n${lines.map((line) => `${line}\n`).join('')}`;
}
