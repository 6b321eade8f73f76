/**
 * The Event Hubs output binding with an identity-based connection (`<name>__fullyQualifiedNamespace` and
 * the app's managed identity) over AMQPS against the stack's Event Hubs and identity emulators: an
 * identity with Azure Event Hubs Data Sender sends; the function app's own role in the topology (Data
 * Receiver) is refused, as Azure refuses it.
 */
import { join } from 'node:path';
import { EventHubConsumerClient, earliestEventPosition } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testContext, testDataDir, waitFor } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { readLog, receiveEvents, startEventHubOutputHost } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let idp: ComponentUnderTest;
let eventHubs: ComponentUnderTest;
let host: ComponentUnderTest | undefined;

beforeAll(async () => {
  idp = await startComponent('identity', { port: 0 }, data.dir);
  const { issuer, jwksUri } = idp.endpoints;
  eventHubs = await startComponent('eventhubs', { port: 0, tlsPort: 0, issuer, jwksUri }, data.dir);
});

afterAll(async () => {
  await host?.stop();
  await eventHubs?.stop();
  await idp?.stop();
  data.remove();
});

/**
 * The test app on `StreamHubConnection__fullyQualifiedNamespace`, as identity `app` of the topology.
 * Its host.json's clientRetryOptions: 2 retries, 0.25 s apart.
 */
async function startHostAs(app: string) {
  await host?.stop();
  const { secrets } = await testContext(data.dir);
  host = await startEventHubOutputHost(data.dir, logFile, {
    StreamHubConnection__fullyQualifiedNamespace: eventHubs.endpoints.fullyQualifiedNamespace as string,
    IDENTITY_ENDPOINT: idp.endpoints.identityEndpoint as string,
    IDENTITY_HEADER: secrets.identities[app]?.header ?? '',
  });
  return host;
}

const sendText = (running: ComponentUnderTest) =>
  fetch(`${running.endpoints.baseUrl}/api/events/text`, { method: 'POST' });

describe('Event Hubs output with an identity-based connection', () => {
  it('sends with the app identity when it holds Azure Event Hubs Data Sender', async () => {
    const running = await startHostAs('webApp');
    expect((await sendText(running)).status).toBe(200);
    const consumer = new EventHubConsumerClient(
      '$Default',
      eventHubs.endpoints.connectionString as string,
      'taskevents',
    );
    try {
      const events = await receiveEvents(consumer, earliestEventPosition, 1);
      expect(events.map((event) => event.body.toString('utf8'))).toEqual(['plain text: é']);
    } finally {
      await consumer.close();
    }
  });

  it("fails the run when the identity may not send (the function app's Data Receiver role), after host.json's retries", async () => {
    // The SDK's own log numbers each try of the sender's link. Its logger reads AZURE_LOG_LEVEL as the
    // host's process loads it, before app settings are applied: the variable goes in that environment.
    process.env.AZURE_LOG_LEVEL = 'verbose';
    const running = await startHostAs('functionApp').finally(() => delete process.env.AZURE_LOG_LEVEL);
    expect((await sendText(running)).status).toBe(500);
    const failure = await waitFor('the failure', () =>
      readLog(logFile).find((e) =>
        e.message.startsWith('Exception while executing function: Functions.sendEvents.'),
      ),
    );
    expect(failure.message).toMatch(
      /\nException: Unauthorized access\. 'Send' claim\(s\) are required to perform this operation\. Resource: 'sb:\/\/127\.0\.0\.1:\d+\/taskevents'\./,
    );
    const tries = running.output.flatMap(
      (line) => /Attempt number for 'senderLink': (\d+)/.exec(line)?.[1] ?? [],
    );
    expect(tries).toEqual(['1', '2', '3']);
    // Two fixed delays of 0.25 s between them (the extension's default would wait 0.8 s, then 1.6 s …).
    const started = readLog(logFile).find((e) => e.message.startsWith("Executing 'Functions.sendEvents'"));
    expect(Date.parse(failure.time) - Date.parse(started?.time ?? '')).toBeGreaterThanOrEqual(500);
  });
});
