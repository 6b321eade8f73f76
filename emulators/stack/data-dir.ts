import { join, resolve } from 'node:path';
import { repositoryRoot } from '../core/files.ts';

/**
 * Where keys, the CA, persisted data, logs and stack.json live, when not given: TASKSTACK_DATA_DIR, else
 * the project's own `.taskstack`, whatever the working directory: `npm start` runs in the project's
 * folder, and a command run from one of its subfolders (`npx taskstack status`) must find the same stack.
 * Apart from options.ts: `taskstack status`, `stop` and `reset` need it without loading zod.
 */
export const defaultDataDir = (): string =>
  process.env.TASKSTACK_DATA_DIR ?? join(repositoryRoot, '.taskstack');

const EMPTY_DATA_DIR =
  'the data directory is empty (--data-dir "" or TASKSTACK_DATA_DIR=""), which would be the working directory: name one, or give neither for the project\'s .taskstack';

/** Data directory `dir` (the default when not given) as an absolute path; throws for an empty one. */
export function resolveDataDir(dir = defaultDataDir()): string {
  // resolve('') is the working directory: `TASKSTACK_DATA_DIR=$UNSET taskstack reset` removed it.
  if (!dir) throw new Error(EMPTY_DATA_DIR);
  return resolve(dir);
}
