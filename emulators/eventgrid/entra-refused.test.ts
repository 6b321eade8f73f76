/**
 * Microsoft Entra publishing refused, as an app whose managed identity holds no EventGrid Data Sender role
 * on the topic (another one does), and with a token made for another resource. (A file of its own: MSAL
 * caches the first identity it sees.)
 */

import type { RestError } from '@azure/core-rest-pipeline';
import { EventGridPublisherClient } from '@azure/eventgrid';
import { ManagedIdentityCredential } from '@azure/identity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actionsOf, errorMessage, startWithIdentity } from './testing.ts';

const TYPE = 'Microsoft.DocumentDB.DocumentCreated';
const TOPIC_ARM_ID =
  '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/taskstack/providers/Microsoft.EventGrid/topics/taskcreatedtopic';

let stack: Awaited<ReturnType<typeof startWithIdentity>>;
let endpoint: string;

beforeAll(async () => {
  stack = await startWithIdentity('webApp', ['functionApp']);
  endpoint = stack.running.endpoints.taskcreatedtopic as string;
});
afterAll(async () => {
  await stack?.stop();
});

const event = (id: string) => ({
  id,
  eventType: TYPE,
  subject: `tasks/${id}`,
  dataVersion: '1.0',
  data: { id },
});

/** A refused publish's message, without the report suffix. */
const refusal = (response: Response) => errorMessage(response, 401, 'Unauthorized', 'Unauthorized');

describe('Event Grid with Entra ID tokens: refusals', () => {
  it('an identity without EventGrid Data Sender gets 401 naming the topic, and nothing is delivered', async () => {
    const client = new EventGridPublisherClient(endpoint, 'EventGrid', new ManagedIdentityCredential());
    const error = (await client.send([event('refused-1')]).catch((e: unknown) => e)) as RestError;
    expect(error.statusCode).toBe(401);
    expect(error.message).toMatch(
      /^The principal associated with access token presented with the incoming request does not have permission to send data to \/subscriptions\/00000000-0000-0000-0000-000000000000\/resourceGroups\/taskstack\/providers\/Microsoft\.EventGrid\/topics\/taskcreatedtopic\. Report '/,
    );

    const token = await new ManagedIdentityCredential().getToken('https://eventgrid.azure.net/.default');
    const response = await fetch(`${endpoint}?api-version=2018-01-01`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token?.token}` },
      body: JSON.stringify([{ ...event('refused-2'), eventTime: '2030-01-01T00:00:00Z' }]),
    });
    expect(await refusal(response)).toBe(
      `The principal associated with access token presented with the incoming request does not have permission to send data to ${TOPIC_ARM_ID}.`,
    );
    expect(await actionsOf(stack.running).deliveries()).toEqual({ attempts: [], pending: [] });
  });

  it('a token for another resource, or one not from the identity provider, is no signature at all', async () => {
    const other = await new ManagedIdentityCredential().getToken('https://eventhubs.azure.net/.default');
    const forged = `${other?.token.slice(0, -4)}AAAA`;
    for (const token of [other?.token, forged, 'not-a-jwt']) {
      const response = await fetch(`${endpoint}?api-version=2018-01-01`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify([{ ...event('refused-3'), eventTime: '2030-01-01T00:00:00Z' }]),
      });
      expect(await refusal(response), String(token).slice(0, 20)).toBe(
        'Request must contain one of the following authorization signature: aeg-sas-token, aeg-sas-key.',
      );
    }
  });
});
