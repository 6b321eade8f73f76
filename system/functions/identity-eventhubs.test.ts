/**
 * ProcessTaskEvents on an identity-based connection (`StreamHubConnection__fullyQualifiedNamespace`, the
 * Functions convention): the host's processor authenticates with the app's managed identity over AMQPS,
 * as the Event Hubs Data Receiver role in the topology allows.
 */
import { EventHubProducerClient } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppStack, startAppStack } from './test-support.ts';

let app: AppStack;
beforeAll(async () => {
  app = await startAppStack({
    components: ['identity', 'blob', 'cosmos', 'keyvault', 'eventhubs', 'functions'],
    settings: {
      StreamHubConnection: '',
      StreamHubConnection__fullyQualifiedNamespace: '@eventhubs.fullyQualifiedNamespace',
    },
  });
}, 60_000);
afterAll(() => app?.stop());

describe('ProcessTaskEvents by managed identity', () => {
  it('receives what is sent to taskevents, with no connection string', async () => {
    const { StreamHubConnection = '' } = app.stack.description.connections;
    const producer = new EventHubProducerClient(StreamHubConnection, 'taskevents');
    const body = `by identity ${crypto.randomUUID()}`;
    try {
      await producer.sendBatch([{ body }]);
    } finally {
      await producer.close();
    }
    const entry = await app.waitForLog(
      (e) => e.function === 'ProcessTaskEvents' && e.message === `ProcessTaskEvents: message: ${body}`,
      60_000,
    );
    expect(entry.level).toBe('information');
  });
});
