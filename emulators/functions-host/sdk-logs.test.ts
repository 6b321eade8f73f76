/**
 * In Azure the app settings are the environment of the host's process from its start, so the Azure SDKs
 * the host uses read theirs as they load: AZURE_LOG_LEVEL turns on their logs (on stderr) for the host's
 * own clients too, here its keys' storage.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import { startComponent } from '../stack/test-support.ts';
import { appPath } from './test/helpers.ts';

const data = testDataDir();
let blob: ComponentUnderTest;
let host: ComponentUnderTest;

beforeAll(async () => {
  blob = await startComponent('blob', { port: 0 }, data.dir);
  host = await startComponent(
    'functions',
    {
      port: 0,
      appDir: appPath('app-platform'),
      settings: { AzureWebJobsStorage: blob.endpoints.connectionString as string, AZURE_LOG_LEVEL: 'info' },
    },
    data.dir,
  );
});

afterAll(async () => {
  await host?.stop();
  await blob?.stop();
  data.remove();
});

it('logs the SDK requests of the host itself when the app setting AZURE_LOG_LEVEL asks for them', async () => {
  // The host reads and writes its keys in azure-webjobs-secrets as it starts, through @azure/storage-blob.
  await waitFor(
    'an SDK log line',
    () => host.output.some((line) => line.startsWith('azure:storage-blob:info Request: {')),
    10_000,
  );
  expect(host.output).toContainEqual(
    expect.stringMatching(
      /^ {2}"url": "http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1\/azure-webjobs-secrets\?/,
    ),
  );
});
