import { ManagedIdentityCredential } from '@azure/identity';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../core/emulator.ts';
import { startEmulator, testContext, testDataDir, useManagedIdentityEnv } from '../core/testing.ts';
import identity from './index.ts';

// A process of its own: MSAL keeps the first managed-identity endpoint and header it sees for good.
const data = testDataDir();
let running: RunningEmulator;
let restoreEnv = () => {};

beforeAll(async () => {
  running = await startEmulator(identity, { port: 0 }, await testContext(data.dir, { inMemory: true }));
});
afterAll(async () => {
  restoreEnv();
  await running?.stop();
  data.remove();
});

it('makes ManagedIdentityCredential fail when the app presents a wrong X-IDENTITY-HEADER', async () => {
  restoreEnv = useManagedIdentityEnv(running.endpoints.identityEndpoint as string, 'not-the-header');
  await expect(new ManagedIdentityCredential().getToken('https://vault.azure.net/.default')).rejects.toThrow(
    /Unauthorized: missing or invalid X-IDENTITY-HEADER/,
  );
});
