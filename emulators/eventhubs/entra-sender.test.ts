/**
 * Entra ID over AMQPS, as the web app: its managed identity holds Azure Event Hubs Data Sender in the
 * topology, so it may send but not receive. (A file of its own: MSAL caches the first identity it sees.)
 */
import { EventHubProducerClient, earliestEventPosition, type MessagingError } from '@azure/event-hubs';
import { ManagedIdentityCredential } from '@azure/identity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EntraStarted, HUB, record, startEventHubsWithIdentity, waitFor } from './test-support.ts';

let hub: EntraStarted;

beforeAll(async () => {
  hub = await startEventHubsWithIdentity();
  hub.signInAs('webApp');
});
afterAll(async () => {
  await hub?.running.stop();
  hub?.remove();
});

describe('Event Hubs with Entra ID tokens: the web app (Data Sender)', () => {
  it('sends over AMQPS with ManagedIdentityCredential; a key-based consumer receives it', async () => {
    const producer = new EventHubProducerClient(
      hub.fullyQualifiedNamespace,
      HUB,
      new ManagedIdentityCredential(),
    );
    try {
      // Runtime information is readable with any right (the JWT rides on the $management request).
      expect(await producer.getPartitionIds()).toEqual(['0', '1']);
      await producer.sendBatch([{ body: 'from the web app' }], { partitionId: '1' });
    } finally {
      await producer.close();
    }
    const recording = record(hub.connectionString, '1', earliestEventPosition);
    try {
      await waitFor(() => recording.events.length > 0, 'the event');
      expect(recording.events.map((e) => e.body)).toEqual(['from the web app']);
    } finally {
      await recording.close();
    }
  });

  it('may not receive: the link is refused with the missing Listen claim', async () => {
    const credential = new ManagedIdentityCredential();
    const { fullyQualifiedNamespace } = hub;
    // The SDK counts an unauthorized link as retryable (a role may be granted meanwhile): no retries here.
    const recording = record({ fullyQualifiedNamespace, credential }, '0', earliestEventPosition, {
      retryOptions: { maxRetries: 0 },
    });
    try {
      await waitFor(() => recording.errors.length > 0, 'the receiver to be refused');
      const error = recording.errors[0] as MessagingError;
      expect(error.code).toBe('UnauthorizedError');
      expect(error.message).toMatch(
        /^Unauthorized access\. 'Listen' claim\(s\) are required to perform this operation\. Resource: 'sb:\/\/127\.0\.0\.1:\d+\/taskevents\/ConsumerGroups\/\$default\/Partitions\/0'\./,
      );
      expect(recording.events).toEqual([]);
    } finally {
      await recording.close();
    }
  });
});
