import { ManagedIdentityCredential } from '@azure/identity';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../core/emulator.ts';
import { startEmulator, testContext, testDataDir } from '../core/testing.ts';
import identity from './index.ts';

// A process of its own: MSAL keeps the first managed-identity endpoint and header it sees for good.
const data = testDataDir();
let running: RunningEmulator;
const saved = { endpoint: process.env.IDENTITY_ENDPOINT, header: process.env.IDENTITY_HEADER };

beforeAll(async () => {
  running = await startEmulator(identity, { port: 0 }, await testContext(data.dir, { inMemory: true }));
});
afterAll(async () => {
  for (const [name, value] of [
    ['IDENTITY_ENDPOINT', saved.endpoint],
    ['IDENTITY_HEADER', saved.header],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await running?.stop();
  data.remove();
});

it('makes ManagedIdentityCredential fail when the app presents a wrong X-IDENTITY-HEADER', async () => {
  process.env.IDENTITY_ENDPOINT = running.endpoints.identityEndpoint;
  process.env.IDENTITY_HEADER = 'not-the-header';
  await expect(new ManagedIdentityCredential().getToken('https://vault.azure.net/.default')).rejects.toThrow(
    /Unauthorized: missing or invalid X-IDENTITY-HEADER/,
  );
});
