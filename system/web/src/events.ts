/**
 * Variant A's task messages: one event per Create to the hub `taskevents` (setting StreamHubName may
 * name another), body the UTF-8 JSON of the task. The connection is the setting StreamHubConnection (a
 * connection string) or StreamHubConnection__fullyQualifiedNamespace (the app's managed identity), as
 * the Functions convention names identity-based connections.
 *
 * A hub that does not answer must neither lose the task nor hang the request: the task is kept before
 * the send, the send is given SEND_TIMEOUT_MS, and a failure is logged (never the connection string).
 */
import { EventHubProducerClient } from '@azure/event-hubs';
import { setting } from '../../functions/src/lib/settings.ts';
import type { Task } from './tasks.ts';

export const SEND_TIMEOUT_MS = 5_000;

export interface TaskEvents {
  /** Sends the task's message; resolves whether or not it was sent (a failure is logged). */
  send(task: Task): Promise<void>;
  close(): Promise<void>;
}

/** The message for one task: its UTF-8 JSON, as the spec's taskevents carries it. */
export const taskMessage = (task: Task) => ({ body: Buffer.from(JSON.stringify(task), 'utf8') });

export async function taskEvents(log: (line: string) => void): Promise<TaskEvents> {
  const hub = setting('StreamHubName') ?? 'taskevents';
  const connection = setting('StreamHubConnection');
  const namespace = setting('StreamHubConnection__fullyQualifiedNamespace');
  // The SDK's own retries stay within the send's time limit.
  const options = { retryOptions: { maxRetries: 1, retryDelayInMs: 500, timeoutInMs: SEND_TIMEOUT_MS } };
  const producer = connection
    ? new EventHubProducerClient(connection, hub, options)
    : namespace
      ? // Imported only for an identity connection: a connection string needs no credential, and the
        // identity SDK (MSAL, jsonwebtoken …) costs the app's start ~100 ms of CPU.
        new EventHubProducerClient(
          namespace,
          hub,
          (await import('../../functions/src/lib/vault.ts')).credential,
          options,
        )
      : undefined;
  if (!producer) {
    // The spec's "local fallback placeholder": without a connection there is nowhere to send to.
    log('StreamHubConnection is not set: task messages are not sent (tasks are still kept)');
    return {
      send: async (task) => log(`task ${task.id}: message not sent (StreamHubConnection is not set)`),
      close: async () => {},
    };
  }
  return {
    async send(task) {
      try {
        await producer.sendBatch([taskMessage(task)], {
          abortSignal: AbortSignal.timeout(SEND_TIMEOUT_MS),
        });
      } catch (error) {
        log(`task ${task.id}: message to ${hub} not sent: ${(error as Error).message}`);
      }
    },
    close: () => producer.close(),
  };
}
