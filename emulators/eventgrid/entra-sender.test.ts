/**
 * Microsoft Entra publishing, as an app whose managed identity holds EventGrid Data Sender on the topic:
 * the unmodified EventGridPublisherClient with ManagedIdentityCredential publishes. (A file of its own:
 * MSAL caches the first identity it sees.)
 */
import { EventGridPublisherClient } from '@azure/eventgrid';
import { ManagedIdentityCredential } from '@azure/identity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWithIdentity } from './testing.ts';

const TYPE = 'Microsoft.DocumentDB.DocumentCreated';
let stack: Awaited<ReturnType<typeof startWithIdentity>>;

beforeAll(async () => {
  stack = await startWithIdentity('functionApp', ['functionApp']);
});
afterAll(async () => {
  await stack?.stop();
});

describe('Event Grid with Entra ID tokens: an identity holding EventGrid Data Sender', () => {
  it('publishes with ManagedIdentityCredential; the event is delivered', async () => {
    const client = new EventGridPublisherClient(
      stack.running.endpoints.taskcreatedtopic as string,
      'EventGrid',
      new ManagedIdentityCredential(),
    );
    const data = { id: 'entra-1', Title: 'by token', Description: 'd', DueDate: '2030-01-01' };
    await client.send([
      { id: 'entra-1', eventType: TYPE, subject: 'tasks/entra-1', dataVersion: '1.0', data },
    ]);

    await expect.poll(() => stack.receiver.deliveriesOf('entra-1').length, { timeout: 60_000 }).toBe(1);
    expect(stack.receiver.deliveriesOf('entra-1')[0]?.body).toEqual([
      expect.objectContaining({ id: 'entra-1', eventType: TYPE, data }),
    ]);
  });
});
