/** The function app under test: the stack's components (the function app in the local host) and helpers. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FEED_POLL_DELAY_MS } from '../../contracts/target.ts';
import { documentedAnswer } from '../../contracts/validate.ts';
import { testDataDir, waitFor } from '../../emulators/core/testing.ts';
import { type LogEntry, readLogFile } from '../../emulators/functions-host/logs.ts';
import { type Stack, start } from '../../emulators/stack/launcher.ts';

export type { LogEntry };

export const CORE_COMPONENTS = ['identity', 'blob', 'cosmos', 'keyvault', 'functions'];

export interface AppStack {
  stack: Stack;
  baseUrl: string;
  key: string;
  /** `<baseUrl>/api/<path>` with the function key in `code`, plus the given query parameters. */
  url(path: string, query?: Record<string, string>): string;
  /** The JSON-lines log of function invocations, as written so far. */
  logs(): LogEntry[];
  /** Polls the function log until an entry matches; fails with the log's tail after `timeoutMs`. */
  waitForLog(match: (entry: LogEntry) => boolean, timeoutMs?: number): Promise<LogEntry>;
  /**
   * Polls the function log until `holds` is true of all its entries (one read per poll: a condition on
   * the whole log, such as a count, must not re-read it for each entry); fails like waitForLog.
   */
  waitForLogs(holds: (entries: LogEntry[]) => boolean, timeoutMs?: number): Promise<void>;
  /**
   * As waitForLogs, for what comes through PublishDocumentCreated's change feed: its poll delay is stack
   * time, so this moves the stack clock by it each second while it waits, rather than wait it out. (A
   * move made while the feed reads rather than waits is lost; the next one catches it.)
   */
  waitForFeed(holds: (entries: LogEntry[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Every line of every log file of the run (components and functions). */
  allLogText(): string;
  stop(): Promise<void>;
}

export interface AppStackOptions {
  settings?: Record<string, string>;
  encryptionKey?: string;
  components?: string[];
  /** Fixed ports for some components (e.g. to name Cosmos' endpoint in a setting before start). */
  portOverrides?: Record<string, number>;
  /** Keep every store in memory (the default); false persists them, so a restarted component keeps its data. */
  inMemory?: boolean;
}

export async function startAppStack(options: AppStackOptions = {}): Promise<AppStack> {
  const data = testDataDir();
  const stack = await start({
    dataDir: data.dir,
    ports: 'free',
    console: false,
    inMemory: options.inMemory ?? true,
    components: options.components ?? CORE_COMPONENTS,
    encryptionKey: options.encryptionKey,
    portOverrides: options.portOverrides,
    settings: { functions: options.settings ?? {} },
  }).catch((error: unknown) => {
    data.remove();
    throw error;
  });
  const { baseUrl = '', functionKey, logs: logFiles } = stack.description;
  const functionLog = logFiles.functions ?? '';
  const readLog = (): LogEntry[] => readLogFile(functionLog);
  const pollLog = <T>(
    what: string,
    probe: (entries: LogEntry[]) => T | undefined | false,
    timeoutMs = 60_000,
    nudge?: () => Promise<void>,
  ) =>
    waitFor(what, () => probe(readLog()), timeoutMs, nudge).catch((error: Error) => {
      const tail = readLog()
        .slice(-15)
        .map((entry) => entry.message)
        .join('\n');
      throw new Error(`${error.message}; last entries:\n${tail}`);
    });
  return {
    stack,
    baseUrl,
    key: functionKey,
    url(path, query = {}) {
      return `${baseUrl}/api/${path}?${new URLSearchParams({ ...query, code: functionKey })}`;
    },
    logs: readLog,
    waitForLog: (match, timeoutMs) =>
      pollLog('a matching function log entry', (e) => e.find(match), timeoutMs),
    async waitForLogs(holds, timeoutMs) {
      await pollLog('the function log to hold what is expected', holds, timeoutMs);
    },
    async waitForFeed(holds, timeoutMs) {
      await pollLog('the change feed to bring what is expected', holds, timeoutMs, () =>
        stack.advanceClock(FEED_POLL_DELAY_MS),
      );
    },
    allLogText() {
      const dir = join(data.dir, 'logs');
      return readdirSync(dir)
        .map((file) => readFileSync(join(dir, file), 'utf8'))
        .join('\n');
    },
    async stop() {
      await stack.stop();
      data.remove();
    },
  };
}

/** A port that was free a moment ago (the launcher checks it again and fails clearly if taken since). */
export { freePort } from '../../emulators/stack/ports.ts';

/**
 * A response reduced to what the contract fixes: status, content type (null when absent) and body text.
 * It must be documented in openapi/functions.json (status, content type, body schema and text).
 */
export const answer = (response: Response) => documentedAnswer('functions', response);

export const TEXT = 'text/plain; charset=utf-8';
export const JSON_TYPE = 'application/json; charset=utf-8';
