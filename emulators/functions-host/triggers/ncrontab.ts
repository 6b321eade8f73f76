/**
 * NCRONTAB schedules as the timer extension's NCrontab reads them, computed by cron-parser:
 * - six fields (seconds first), or five without seconds;
 * - each field numbers, `*`, ranges `a-b`, steps `/n` and lists `,` only (no `?`, `L`, `W`, `#`); days of
 *   week 0-6 (Sunday 0; no 7); month and day names are any prefix of the English name, in any case;
 * - a time matches when its day is in the day-of-month field **and** in the day-of-week field
 *   (`0 0 9 1-7 * 1` is the first Monday of a month), where cron-parser, as Vixie cron, takes either.
 */
import { CronExpressionParser } from 'cron-parser';

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/**
 * A field as NCrontab reads it, in the terms cron-parser takes, or undefined: names made numbers (the
 * first name the text begins), a range written high to low swapped (`Fri-Mon` is Monday to Friday), a
 * step of 0 taken as 1, and a start with a step (`1/2`) running to the field's own maximum (cron-parser
 * runs days of week to 7, a Sunday).
 */
function numbered(
  field: string,
  names: string[] | undefined,
  first: number,
  max: number,
): string | undefined {
  const value = (text: string) => {
    if (/^[0-9]+$/.test(text)) return Number(text);
    const index = names?.findIndex((name) => name.toLowerCase().startsWith(text.toLowerCase())) ?? -1;
    return index < 0 || text === '' ? undefined : index + first;
  };
  const parts = field.split(',').map((part) => {
    const [range = '', step, extra] = part.split('/');
    if (extra !== undefined || (step !== undefined && !/^[0-9]+$/.test(step))) return undefined;
    const every = step === undefined ? '' : `/${Math.max(1, Number(step))}`;
    if (range === '*') return `*${every}`;
    const [low, high, more] = range.split('-').map(value);
    if (more !== undefined || low === undefined || (range.includes('-') && high === undefined))
      return undefined;
    const end = high ?? (step === undefined ? low : max);
    if (Math.max(low, end) > max) return undefined;
    return low === end && !every ? `${low}` : `${Math.min(low, end)}-${Math.max(low, end)}${every}`;
  });
  return parts.includes(undefined) ? undefined : parts.join(',');
}

/** The six fields, seconds first, names made numbers; undefined when `expression` is no NCRONTAB. */
function parseFields(expression: string): string[] | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length === 5) fields.unshift('0');
  if (fields.length !== 6) return undefined;
  const [seconds = '', minutes = '', hours = '', days = '', months = '', weekdays = ''] = fields;
  const checked = [
    numbered(seconds, undefined, 0, 59),
    numbered(minutes, undefined, 0, 59),
    numbered(hours, undefined, 0, 23),
    numbered(days, undefined, 1, 31),
    numbered(months, MONTHS, 1, 12),
    numbered(weekdays, DAYS, 0, 6),
  ];
  return checked.some((field) => field === undefined) ? undefined : (checked as string[]);
}

/** The values of each of the six fields, as cron-parser expands them (days of week 0-6). */
function fieldValues(fields: string[]): number[][] {
  const { second, minute, hour, dayOfMonth, month, dayOfWeek } = CronExpressionParser.parse(
    fields.join(' '),
  ).fields;
  const week = [...new Set(dayOfWeek.values.map((day) => Number(day) % 7))].sort((a, b) => a - b);
  return [second, minute, hour, dayOfMonth, month].map((field) => field.values.map(Number)).concat([week]);
}

/** Each field's lowest and highest value, seconds first. */
const BOUNDS = [
  [0, 59],
  [0, 59],
  [0, 23],
  [1, 31],
  [1, 12],
  [0, 6],
] as const;

/**
 * The schedule as NCrontab's CrontabSchedule.ToString() writes it, expanded: runs of values as `a-b`,
 * a field with every value as `*`, numbers for names; no seconds field for five fields. The extension
 * names a schedule so in its log (`Cron: '0 0,5,10,…,55 * * * *'`).
 */
export function expanded(expression: string): string | undefined {
  const fields = parseFields(expression);
  if (!fields) return undefined;
  const text = fieldValues(fields).map((values, index) => {
    const [min, max] = BOUNDS[index] ?? [0, 0];
    const runs: string[] = [];
    for (let at = 0; at < values.length; ) {
      let end = at;
      while (values[end + 1] === (values[end] ?? 0) + 1) end++;
      runs.push(end === at ? `${values[at]}` : `${values[at]}-${values[end]}`);
      at = end + 1;
    }
    return runs.length === 1 && values[0] === min && values.at(-1) === max ? '*' : runs.join(',');
  });
  return (expression.trim().split(/\s+/).length === 5 ? text.slice(1) : text).join(' ');
}

/**
 * True for a schedule that fires more than once a minute (every field but the seconds takes every
 * value, the seconds more than one), for which TimerSchedule.Create turns the schedule monitor off.
 */
export function subMinute(expression: string): boolean {
  const fields = parseFields(expression);
  if (!fields || expression.trim().split(/\s+/).length !== 6) return false;
  const [second = [], ...others] = fieldValues(fields);
  const every = (values: number[], index: number) => {
    const [min, max] = BOUNDS[index + 1] ?? [0, 0];
    return new Set(values).size === max - min + 1;
  };
  return second.length > 1 && others.every(every);
}

/** The next occurrence strictly after `after` (ms), or undefined when `expression` is no NCRONTAB. */
export function ncrontab(expression: string, timeZone: string): ((after: number) => number) | undefined {
  const fields = parseFields(expression);
  if (!fields) return undefined;
  const [s, m, h, d, mo, w] = fields;
  const next = (cron: string) => (after: number) =>
    CronExpressionParser.parse(cron, { tz: timeZone, currentDate: new Date(after) })
      .next()
      .getTime();
  let byDay: (after: number) => number;
  let byWeekday: (after: number) => number;
  try {
    byDay = next(`${s} ${m} ${h} ${d} ${mo} *`);
    byWeekday = next(`${s} ${m} ${h} * ${mo} ${w}`);
    byDay(0);
    byWeekday(0);
  } catch {
    return undefined;
  }
  if (d === '*') return byWeekday;
  if (w === '*') return byDay;
  // Both restricted: the first time each gives from the later of the two, until they agree.
  return (after) => {
    let from = after;
    for (let tries = 0; tries < 10_000; tries++) {
      const [a, b] = [byDay(from), byWeekday(from)];
      if (a === b) return a;
      from = Math.max(a, b) - 1;
    }
    throw new Error(`timer schedule '${expression}' has no occurrence in sight`);
  };
}
