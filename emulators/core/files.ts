import {
  chmodSync,
  createWriteStream,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's folder (here, not in apps.ts: commands that read no app declaration need it without zod). */
export const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Writes a file atomically (temp file + rename) so a crash never leaves half a key or half a store; a
 * write that fails (a full disk) leaves no temp file behind either.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temp, data, { mode });
    chmodSync(temp, mode);
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/** Reads a text file, or returns undefined when it does not exist. */
export function readTextIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** C0 and C1 control characters but tab: what could move a terminal's cursor or forge a log line. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f-\x9f]/g;

/**
 * A line as it may be shown or filed: control characters in text a client sent (a task's Title with
 * ESC or CR in it) are written as `\xHH`, so they can neither drive the terminal nor fake a log line.
 */
export const printable = (text: string): string =>
  text.replace(CONTROL, (char) => `\\x${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);

/** Reads and parses a JSON file, or returns undefined when it does not exist; a damaged one is named. */
export function readJsonIfExists<T>(path: string): T | undefined {
  const text = readTextIfExists(path);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    // V8 quotes the text it could not parse, newlines and all: escaped, the message stays one line.
    throw new Error(`${path} is not valid JSON (${printable((error as Error).message)})`);
  }
}

/**
 * An append-only log file that cannot take its process down: the first failed write (a full disk, a
 * directory in its place) is told to `failed`, and later lines are dropped rather than thrown.
 */
export function openLogFile(path: string, failed: (error: Error) => void) {
  let stream: ReturnType<typeof createWriteStream> | undefined = createWriteStream(path, {
    flags: 'a',
    mode: 0o600,
  });
  stream.on('error', (error) => {
    if (!stream) return;
    stream = undefined;
    failed(error);
  });
  return {
    write(text: string): void {
      stream?.write(text);
    },
    end(): Promise<void> {
      const open = stream;
      stream = undefined;
      return new Promise((resolve) => (open ? open.end(() => resolve()) : resolve()));
    },
  };
}

export type LogFile = ReturnType<typeof openLogFile>;
