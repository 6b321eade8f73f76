/**
 * The Event Hubs trigger's processor retries as host.json's `clientRetryOptions` say: a partition receiver
 * the service refuses (an identity with Azure Event Hubs Data Sender only, which may read the hub but not
 * receive) is tried again as often as they allow, then the processor's error is logged. The tries are
 * counted in the SDK's own log, which numbers them.
 */
import { cpSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { repositoryRoot } from '../core/apps.ts';
import { testContext, testDataDir, waitFor } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { appPath, readLog } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
const running: ComponentUnderTest[] = [];

afterAll(async () => {
  for (const component of running.reverse()) await component.stop();
  data.remove();
});

async function start(name: string, options: Record<string, unknown>) {
  const component = await startComponent(name, options, data.dir);
  running.push(component);
  return component;
}

it('tries a refused partition receiver once more (maximumRetries 1), not the default 3 more times', async () => {
  const idp = await start('identity', { port: 0 });
  const { issuer, jwksUri } = idp.endpoints;
  const eventHubs = await start('eventhubs', { port: 0, tlsPort: 0, issuer, jwksUri });
  const blob = await start('blob', { port: 0 });
  const appDir = join(data.dir, 'app-client-retry');
  cpSync(appPath('app-esm'), appDir, { recursive: true });
  symlinkSync(join(repositoryRoot, 'node_modules'), join(appDir, 'node_modules'));
  const clientRetryOptions = { mode: 'fixed', delay: '00:00:00.1', maximumRetries: 1 };
  writeFileSync(
    join(appDir, 'host.json'),
    JSON.stringify({ version: '2.0', extensions: { eventHubs: { clientRetryOptions } } }),
  );
  const { secrets } = await testContext(data.dir);
  // The SDK's logger reads AZURE_LOG_LEVEL as the host's process loads it, before app settings apply.
  process.env.AZURE_LOG_LEVEL = 'verbose';
  const host = await start('functions', {
    port: 0,
    appDir,
    logFile,
    settings: {
      AzureWebJobsStorage: blob.endpoints.connectionString,
      StreamHubConnection__fullyQualifiedNamespace: eventHubs.endpoints.fullyQualifiedNamespace,
      IDENTITY_ENDPOINT: idp.endpoints.identityEndpoint,
      IDENTITY_HEADER: secrets.identities.webApp?.header ?? '',
      OneConsumerGroup: '$Default',
      'AzureWebJobs.oneAtATime.Disabled': 'true',
    },
  }).finally(() => delete process.env.AZURE_LOG_LEVEL);

  await waitFor('the processor error', () =>
    readLog(logFile).some(
      (e) =>
        e.message.startsWith("Event Hubs 'Functions.ProcessTaskEvents' partition ") &&
        e.message.includes("Unauthorized access. 'Listen' claim(s) are required"),
    ),
  );
  const tries = () =>
    host.output.flatMap((line) => /Attempt number for 'receiveMessage': (\d+)/.exec(line)?.[1] ?? []);
  await waitFor('the second try in the output', () => tries().includes('2'));
  expect(Math.max(...tries().map(Number))).toBe(2);
});
