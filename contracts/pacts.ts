/**
 * The committed pact files (contracts/pacts/, ready for a broker), their consumer and provider names,
 * and the check that they hold exactly what the consumer tests write: the tests write to a fresh
 * directory; TASKSTACK_UPDATE_PACTS=1 copies the result over the committed file after a deliberate change.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACT_DIR = fileURLToPath(new URL('./pacts/', import.meta.url));
export const GATEWAY_CONSUMER = 'TaskGatewayClient';
export const FUNCTIONS_API = 'TaskManagerFunctionsAPI';
export const WEB_API = 'TaskManagerWebAPI';
/** The DocumentCreated events: consumed by the function TaskCreatedNotification. */
export const DOCUMENT_CREATED_CONSUMER = 'TaskCreatedNotification';
export const DOCUMENT_CREATED_PRODUCER = 'PublishDocumentCreated';
/** The task messages on taskevents: sent by web app A, consumed by the function ProcessTaskEvents. */
export const TASK_MESSAGE_CONSUMER = 'ProcessTaskEvents';
export const TASK_MESSAGE_PRODUCER = 'TaskWebApp';
/** The key the consumer tests send; provider verification swaps in the target's real key. */
export const PLACEHOLDER_KEY = 'consumer-subscription-key';

const fileName = (consumer: string, provider: string) => `${consumer}-${provider}.json`;
export const pactFile = (consumer: string, provider: string) => join(PACT_DIR, fileName(consumer, provider));

export const freshPactDir = () => mkdtempSync(join(tmpdir(), 'pacts-'));

/** Undefined when the committed pact equals the one written to `dir`, else what to do about it. */
export function committedPactDrift(dir: string, consumer: string, provider: string): string | undefined {
  const fresh = join(dir, fileName(consumer, provider));
  const committed = pactFile(consumer, provider);
  if (process.env.TASKSTACK_UPDATE_PACTS === '1') copyFileSync(fresh, committed);
  if (!existsSync(committed))
    return `${committed} is missing: run the consumer tests with TASKSTACK_UPDATE_PACTS=1`;
  const same =
    JSON.stringify(JSON.parse(readFileSync(committed, 'utf8'))) ===
    JSON.stringify(JSON.parse(readFileSync(fresh, 'utf8')));
  return same
    ? undefined
    : `${committed} drifted from the consumer tests: run them with TASKSTACK_UPDATE_PACTS=1 and review the diff`;
}
