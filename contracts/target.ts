/**
 * A target is what a contract run talks to: the fields of stack.json. The embedded stack's own file, or
 * `--target FILE` / TASKSTACK_TARGET_FILE naming one for a stack running elsewhere (docker-compose,
 * Azure). A field a target lacks skips exactly the checks that need it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { argsRefusal } from '../emulators/core/args.ts';
import { caFile } from '../emulators/core/ca.ts';
import { reasonOf } from '../emulators/core/http.ts';
import { CONTROL_KEY_HEADER } from '../emulators/stack/control.ts';
import { parseStackOptions } from '../emulators/stack/options.ts';
import { runningStack, stackFilePath } from '../emulators/stack/stackfile.ts';

export interface Target {
  baseUrl?: string;
  functionKey?: string;
  webBaseUrl?: string;
  /** Web app B (signed-in variant): stack.json's apps['web-b'].url. */
  webBBaseUrl?: string;
  gatewayUrl?: string;
  subscriptionKey?: string;
  /** The function host's JSON-lines invocation log: stack.json's logs.functions (the local stack only). */
  functionsLog?: string;
  /** With masterKey: the stack clock can be moved (the local stack only). */
  controlUrl?: string;
  masterKey?: string;
  /**
   * The local CA of the data directory stack.json names (its dataDir), which signs the stack's HTTPS
   * endpoints; none for a target naming none (a stack in Azure).
   */
  ca?: string;
}

export type Need = keyof Target;

export const TARGET_ENV = 'TASKSTACK_TARGET_FILE';

/** The target file named by `--target FILE` in argv or by TASKSTACK_TARGET_FILE; undefined for none. */
export function targetFileFrom(argv: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  const at = argv.indexOf('--target');
  if (at >= 0) {
    const file = argv[at + 1];
    if (!file) throw new Error('--target needs a file: a stack.json-shaped description of the target');
    return file;
  }
  return env[TARGET_ENV] || undefined;
}

const FIELDS: Need[] = [
  'baseUrl',
  'functionKey',
  'webBaseUrl',
  'gatewayUrl',
  'subscriptionKey',
  'controlUrl',
  'masterKey',
];

const URLS = new Set<Need>(['baseUrl', 'webBaseUrl', 'gatewayUrl', 'controlUrl']);

/**
 * A field's value: a string (empty or null for none); an address is an http(s) URL, taken without
 * trailing slashes (the rows append paths). Throws naming the field.
 */
function fieldValue(field: string, value: unknown, isUrl: boolean): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new Error(`${field} must be a string, not ${JSON.stringify(value)}`);
  if (!isUrl) return value;
  if (!/^https?:\/\/[^/]/.test(value) || !URL.canParse(value))
    throw new Error(`${field} must be an http or https URL, not ${JSON.stringify(value)}`);
  const { search, hash } = new URL(value);
  if (search || hash)
    throw new Error(
      `${field} must be the app’s address, without a query or fragment (the rows add paths and the key), not ${JSON.stringify(value)}`,
    );
  return value.replace(/\/+$/, '');
}

/** Reads a target file, keeping only the fields a contract run uses; throws one line naming a wrong one. */
export function readTarget(file: string): Target {
  let parsed: unknown;
  try {
    // A leading byte-order mark, as some Windows editors write one, is not JSON's but is no error here.
    parsed = JSON.parse(readFileSync(file, 'utf8').replace(/^\ufeff/, ''));
  } catch (error) {
    throw new Error(`target ${file} cannot be read as JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`target ${file} is not a JSON object`);
  const description = parsed as Record<string, unknown>;
  const target: Target = {};
  try {
    for (const key of Object.keys(description)) {
      const meant = FIELDS.find((field) => field !== key && field.toLowerCase() === key.toLowerCase());
      if (meant) throw new Error(`${key} is not a target field: did you mean ${meant}?`);
    }
    for (const field of FIELDS) {
      const value = fieldValue(field, description[field], URLS.has(field));
      if (value !== undefined) target[field] = value;
    }
    const apps = description.apps as Record<string, { url?: unknown } | undefined> | undefined;
    const webB = fieldValue('apps["web-b"].url', apps?.['web-b']?.url, true);
    if (webB !== undefined) target.webBBaseUrl = webB;
    const logs = description.logs as Record<string, unknown> | undefined;
    const log = fieldValue('logs.functions', logs?.functions, false);
    if (log !== undefined) target.functionsLog = log;
  } catch (error) {
    throw new Error(`target ${file}: ${(error as Error).message}`);
  }
  const { dataDir } = description;
  if (typeof dataDir === 'string' && existsSync(caFile(dataDir))) target.ca = caFile(dataDir);
  return target;
}

/** What `conformance` and `scenario run` take, said after any refusal of their options. */
const TARGET_OPTIONS =
  'the options are --target FILE (a stack.json-shaped description of the target) and --data-dir DIR';

/**
 * The target of a command run against a stack (`taskstack conformance`, `taskstack scenario run`), from
 * its options `argv`: the file --target or TASKSTACK_TARGET_FILE names, else the stack.json of the data
 * directory (--data-dir, as every taskstack command takes it, else TASKSTACK_DATA_DIR, else the
 * project's). Throws one line for the user when `argv` holds anything else or there is no target to read.
 */
export function commandLineTarget(argv: readonly string[], env: NodeJS.ProcessEnv) {
  let values: { target?: string; 'data-dir'?: string };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { target: { type: 'string' }, 'data-dir': { type: 'string' } },
    }));
  } catch (error) {
    throw new Error(`${argsRefusal(error)}; ${TARGET_OPTIONS}`);
  }
  const named = values.target ?? (env[TARGET_ENV] || undefined);
  if (named === '') throw new Error(`--target needs a file; ${TARGET_OPTIONS}`);
  const { dataDir } = parseStackOptions({ dataDir: values['data-dir'] ?? env.TASKSTACK_DATA_DIR });
  if (!named && !runningStack(dataDir))
    throw new Error(
      `no stack is running on ${dataDir}: start one (npm start), or name one with --target FILE`,
    );
  const file = named ?? stackFilePath(dataDir);
  return { file, target: readTarget(file) };
}

/** commandLineTarget for `taskstack <command>`: its refusal ends the process, in one line (exit 2). */
export function targetOrExit(command: string, argv: readonly string[], env: NodeJS.ProcessEnv) {
  try {
    return commandLineTarget(argv, env);
  } catch (error) {
    console.error(`taskstack ${command}: ${(error as Error).message}`);
    return process.exit(2);
  }
}

/**
 * The last line of a run in which every check was skipped (which then exits 1: nothing was verified).
 * Every field is named, as a hand-written target most often misspells or forgets one.
 */
export const nothingRan = (file: string) =>
  `nothing ran: every check needs a field ${file} lacks (named above); a target's fields: ${[...FIELDS, 'apps["web-b"].url', 'logs.functions'].join(', ')} (contracts/target.ts)`;

export const missing = (target: Target, needs: readonly Need[]) => needs.filter((need) => !target[need]);

/** A POST to the target's control API (needs controlUrl and masterKey); answers the JSON it returns. */
export async function control(target: Target, path: string, body: unknown): Promise<unknown> {
  const response = await fetchTarget(`${target.controlUrl}${path}`, {
    method: 'POST',
    headers: { [CONTROL_KEY_HEADER]: target.masterKey ?? '' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}

export const ANSWER_TIMEOUT_ENV = 'TASKSTACK_ANSWER_TIMEOUT_MS';
const ANSWER_TIMEOUT_MS = 30_000;
/** Node's codes for a certificate chain it does not trust (a local stack's CA, among others). */
const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);
const TRUST_HINT =
  '(a local stack’s CA: give the target its dataDir, or set NODE_EXTRA_CA_CERTS=<data dir>/ca/ca.pem)';
/** Origins that let a request time out in this run: later requests to them fail at once. */
const silentOrigins = new Set<string>();

/**
 * fetch for a contract run: a target that accepts connections but never answers (a dropping firewall,
 * a hung app) fails the request after TASKSTACK_ANSWER_TIMEOUT_MS (30 s; the body included) rather than
 * after undici's 300 s per request, and every later request to that origin fails at once, so a silent
 * target costs one timeout per origin, not one per row.
 */
export async function fetchTarget(url: string, init: RequestInit = {}): Promise<Response> {
  const ms = Number(process.env[ANSWER_TIMEOUT_ENV]) || ANSWER_TIMEOUT_MS;
  const { origin } = new URL(url);
  const silence = `no answer from ${origin} within ${ms / 1000} s`;
  if (silentOrigins.has(origin)) throw new Error(`${silence} (an earlier request)`);
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(ms) });
  } catch (error) {
    const { code } = ((error as Error).cause ?? {}) as { code?: string };
    if (code && UNTRUSTED.has(code)) throw new Error(`${reasonOf(error)} ${TRUST_HINT}`);
    if ((error as Error).name !== 'TimeoutError') throw error;
    silentOrigins.add(origin);
    throw new Error(silence);
  }
}

/** Moves the target's stack clock through its control API. */
export async function advanceClock(target: Target, ms: number): Promise<void> {
  await control(target, '/clock/advance', { ms });
}

/**
 * The change feed's poll delay for PublishDocumentCreated: the Cosmos DB extension's default (the app sets
 * none). The local host waits it in stack time, so moving the clock by it brings the next poll at once.
 */
export const FEED_POLL_DELAY_MS = 5_000;
