/**
 * Attachment names. The blob is `<taskId>/<fileName>`, so each part must be exactly one path segment
 * that storage keeps as given: no separators (a name with `/` or `\` is refused, not cut to its last
 * part, so the client learns its name was not used), no trailing dot (which also rules out `.` and
 * `..`, whose URL normalisation would move the blob out of the task's folder; Azure advises against
 * trailing dots anyway), no control characters, no lone surrogates (neither has a form storage keeps).
 * Other Unicode characters are kept in file names. The taskId also becomes the `TaskId` metadata value,
 * which travels as an HTTP header: printable ASCII only.
 */
const MAX_CHARS = 255;

function isSegment(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= MAX_CHARS &&
    name.trim() === name &&
    !/[/\\\p{Cc}\uD800-\uDFFF]/u.test(name) &&
    !name.endsWith('.')
  );
}

export const isValidTaskId = (taskId: string) => isSegment(taskId) && /^[\x20-\x7e]+$/.test(taskId);
export const isValidFileName = isSegment;

export const INVALID_TASK_ID =
  'Invalid taskId: use 1 to 255 printable ASCII characters, without / or \\, without leading or trailing spaces, not ending with a dot.';
export const INVALID_FILE_NAME =
  'Invalid file name: use 1 to 255 characters, without /, \\ or control characters, without leading or trailing spaces, not ending with a dot.';

/** The first name that cannot be used, as a 400 text; undefined when both are fine. */
export function nameProblem(taskId: string, fileName: string): string | undefined {
  if (!isValidTaskId(taskId)) return INVALID_TASK_ID;
  if (!isValidFileName(fileName)) return INVALID_FILE_NAME;
  return undefined;
}
