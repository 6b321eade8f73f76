/** Runs the documented-status table against a target and prints it with pass/fail/skip per row. */

import { reasonOf } from '../emulators/core/http.ts';
import { ELSEWHERE, type Memo, ROWS, type Row } from './rows.ts';
import { advanceClock, fetchTarget, missing, type Target } from './target.ts';
import { answerOf, problemsWith } from './validate.ts';

export interface RowResult {
  row: Pick<Row, 'name' | 'status'>;
  outcome: 'pass' | 'fail' | 'skip';
  detail: string;
}

/** Past the gateway's 60-second rate-limit window. */
const PAST_WINDOW_MS = 61_000;
const CLOCK: (keyof Target)[] = ['controlUrl', 'masterKey'];
const RATE_LIMITED =
  ' (the subscription made calls in the last 60 s: without controlUrl and masterKey, the gateway rows need a subscription idle for a minute)';

/** The fields the row needs that the target lacks: the reason it is skipped, or empty. */
export const skipReason = (row: Row, target: Target) => {
  const lacking = missing(target, row.needs);
  return lacking.length ? `target has no ${lacking.join(', ')}` : '';
};

const SHOWN = 300;

/**
 * A body as JSON writes it, cut at 300 characters, with every character outside printable ASCII
 * escaped: a difference the eye cannot see (a zero-width or no-break space, a BOM) shows.
 */
export const shown = (text: string) =>
  JSON.stringify(text.slice(0, SHOWN)).replace(
    /[^\x20-\x7e]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  ) + (text.length > SHOWN ? '…' : '');

/** The 1-based position of the first character where the texts differ. */
function firstDifference(a: string, b: string): number {
  let at = 0;
  while (at < a.length && a[at] === b[at]) at++;
  return at + 1;
}

/**
 * Whether a JSON body is laid out as the apps write JSON (and as ASP.NET's System.Text.Json does by
 * default): without whitespace between tokens. A body that is not JSON at all is the validator's to report.
 */
function compactOrNotJson(body: string): boolean {
  try {
    return JSON.stringify(JSON.parse(body)) === body;
  } catch {
    return true;
  }
}

/**
 * Runs one row; `passed` holds the names of the rows that passed before it, and gets this one's if it
 * passes.
 */
export async function runRow(
  row: Row,
  target: Target,
  memo: Memo,
  passed = new Set<string>(),
): Promise<RowResult> {
  const reason = skipReason(row, target);
  if (reason) return { row, outcome: 'skip', detail: reason };
  if (row.reliesOn && !passed.has(row.reliesOn))
    return { row, outcome: 'fail', detail: `not run: it relies on "${row.reliesOn}", which did not pass` };
  const problems: string[] = [];
  try {
    // Without the clock the window cannot be moved: the rows then need a gateway left idle for 60 s.
    if (row.before === 'advanceClock' && missing(target, CLOCK).length === 0)
      await advanceClock(target, PAST_WINDOW_MS);
    const { url, init } = row.request(target, memo);
    const answer = await answerOf(await fetchTarget(url, { ...init, redirect: 'manual' }));
    if (answer.status !== row.status)
      problems.push(
        `status ${answer.status}, expected ${row.status}${answer.status === 429 && missing(target, CLOCK).length ? RATE_LIMITED : ''}`,
      );
    problems.push(...(await problemsWith(row.surface, row.method, row.path, answer)));
    if (typeof row.body === 'string' && answer.body !== row.body)
      problems.push(
        `body ${shown(answer.body)} (${answer.body.length} characters), expected ${shown(row.body)} (${row.body.length}): they differ from character ${firstDifference(answer.body, row.body)}`,
      );
    // A JSON body with generated values has no exact text, but its bytes are still fixed up to them.
    if (row.body === undefined && /json/.test(answer.contentType ?? '') && !compactOrNotJson(answer.body))
      problems.push(`body ${shown(answer.body)} is not compact JSON (whitespace between its tokens)`);
    if (row.body instanceof RegExp && !row.body.test(answer.body))
      problems.push(`body ${shown(answer.body)} does not match ${row.body}`);
    if (problems.length === 0) {
      row.check?.(answer.body, memo);
      row.remember?.(answer.body, memo);
    }
  } catch (error) {
    problems.push(reasonOf(error));
  }
  if (problems.length) return { row, outcome: 'fail', detail: problems.join('; ') };
  passed.add(row.name);
  return { row, outcome: 'pass', detail: '' };
}

export async function runTable(target: Target, rows: readonly Row[] = ROWS): Promise<RowResult[]> {
  const memo: Memo = {};
  const passed = new Set<string>();
  const results: RowResult[] = [];
  for (const row of rows) results.push(await runRow(row, target, memo, passed));
  return results;
}

/** The rows of ELSEWHERE, as a run reports them: skipped, naming where they are checked. */
export const elsewhere = (): RowResult[] =>
  ELSEWHERE.map(({ reason, ...row }) => ({ row, outcome: 'skip', detail: reason }));

export function formatTable(results: readonly RowResult[]): string {
  const width = Math.max(...results.map((result) => result.row.name.length));
  return results
    .map(({ row, outcome, detail }) =>
      `${outcome.toUpperCase().padEnd(4)}  ${row.status}  ${row.name.padEnd(width)}  ${detail}`.trimEnd(),
    )
    .join('\n');
}
