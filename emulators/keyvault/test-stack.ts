/** What the vault's test files share: identity + vault started in-process, the SDK speaking as functionApp. */
import { DefaultAzureCredential } from '@azure/identity';
import { SecretClient } from '@azure/keyvault-secrets';
import type { RunningEmulator } from '../core/emulator.ts';
import {
  startEmulator,
  type TestContext,
  testContext,
  testDataDir,
  useAppIdentityEnv,
} from '../core/testing.ts';
import identity from '../identity/index.ts';
import keyvault from './index.ts';

export const seed = {
  DocumentDbConnection: 'AccountEndpoint=https://127.0.0.1:8081/;',
  EncryptionKey: 'k'.repeat(32),
};

export interface RawResponse {
  status: number;
  headers: Headers;
  body: { error?: { code: string; message: string; innererror?: { code: string } } } | undefined;
}

export interface VaultTestStack {
  context: TestContext;
  idp: RunningEmulator;
  vault: RunningEmulator;
  credential: DefaultAzureCredential;
  client: SecretClient;
  /** Vault options as the launcher would give them; `extra` overrides. */
  options(extra?: object): Record<string, unknown>;
  /** Starts the vault again (same port unless told), e.g. after a stop. */
  restart(extra?: object): Promise<void>;
  /** A raw request, as functionApp unless `auth` is false, for what the SDK never sends. */
  raw(path: string, init?: RequestInit, auth?: boolean): Promise<RawResponse>;
  stop(): Promise<void>;
}

export async function startVaultStack(): Promise<VaultTestStack> {
  const data = testDataDir();
  const context = await testContext(data.dir);
  const idp = await startEmulator(identity, { port: 0 }, context);
  const options = (extra: object = {}) => ({
    port: 0,
    authority: `${idp.endpoints.authority}/${context.secrets.tenantId}`,
    issuer: idp.endpoints.issuer,
    jwksUri: idp.endpoints.jwksUri,
    seed,
    ...extra,
  });
  // MSAL keeps the first managed identity a process uses: the SDK is functionApp for the whole file.
  const restoreEnv = useAppIdentityEnv(idp, context, 'functionApp');
  const credential = new DefaultAzureCredential();
  const vault = await startEmulator(keyvault, options(), context);
  // Restarts keep the port, so the client stays valid.
  const client = new SecretClient(`${vault.endpoints.vault}`, credential, {
    disableChallengeResourceVerification: true,
  });
  const stack: VaultTestStack = {
    context,
    idp,
    vault,
    credential,
    client,
    options,
    async restart(extra = {}) {
      const port = Number(new URL(`${stack.vault.endpoints.vault}`).port);
      stack.vault = await startEmulator(keyvault, options({ port, ...extra }), context);
    },
    async raw(path, init = {}, auth = true) {
      const headers = new Headers(init.headers);
      if (auth)
        headers.set(
          'authorization',
          `Bearer ${(await credential.getToken('https://vault.azure.net/.default')).token}`,
        );
      const response = await fetch(new URL(path, stack.vault.endpoints.vault), { ...init, headers });
      return {
        status: response.status,
        headers: response.headers,
        body: await response.json().catch(() => undefined),
      };
    },
    async stop() {
      restoreEnv();
      await stack.vault.stop();
      await idp.stop();
      data.remove();
    },
  };
  return stack;
}

/** The SDK's error for a call expected to fail, reduced to what Key Vault sent. */
export async function failure(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: { statusCode: number; code: string; message: string }) => e,
  );
  if (!error) throw new Error('expected the call to fail');
  return { statusCode: error.statusCode, code: error.code, message: error.message };
}
