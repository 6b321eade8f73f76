import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { readTarget, TARGET_ENV } from './contracts/target.ts';
import { loadTls } from './emulators/core/ca.ts';
import { bypassProxyForLoopback } from './emulators/core/http.ts';
import { withoutShellCredentials } from './emulators/core/platform.ts';
import { loadSecrets } from './emulators/core/secrets.ts';
import { loadTopology } from './emulators/core/topology.ts';

// One local CA for every test's data directory, created before the test processes fork so that
// they trust it from birth (Node reads NODE_EXTRA_CA_CERTS only at process start); and one identity
// signing key, which testDataDir copies too (keys.json here; the other keys stay per directory).
const testSharedDir = fileURLToPath(new URL('./.taskstack/test', import.meta.url));
const { caPath } = await loadTls(testSharedDir);
await loadSecrets(testSharedDir, loadTopology());
process.env.NODE_EXTRA_CA_CERTS = trustedCas(caPath);
process.env.TASKSTACK_TEST_SHARED_DIR = testSharedDir;
// The tests drive the stores with the Azure SDKs, which would send even loopback requests to a
// developer's HTTP(S)_PROXY.
Object.assign(process.env, bypassProxyForLoopback(process.env));
// Nor may a shell signed in to a developer's own tenant (AZURE_CLIENT_ID …) choose the credential the
// tests' SDK clients use: they sign in as the stack's identities.
for (const name of withoutShellCredentials(process.env).removed) delete process.env[name];

/**
 * The CA file the test processes trust: the tests' own, and for `TASKSTACK_TARGET_FILE=FILE npm test`
 * against a local stack (the file names its dataDir) that stack's CA too, in one bundle, as
 * NODE_EXTRA_CA_CERTS names a single file. A target file that cannot be read is left to the table's
 * test to report.
 */
function trustedCas(testCa: string): string {
  const file = process.env[TARGET_ENV];
  let targetCa: string | undefined;
  try {
    targetCa = file ? readTarget(file).ca : undefined;
  } catch {
    return testCa;
  }
  if (!targetCa) return testCa;
  const bundle = join(testSharedDir, 'ca', 'with-target.pem');
  writeFileSync(bundle, `${readFileSync(testCa, 'utf8')}\n${readFileSync(targetCa, 'utf8')}`);
  return bundle;
}

const ALL = ['{emulators,system,gateway-sim,contracts,scenarios}/**/*.test.ts'];
/**
 * Test files that build managed-identity credentials in the test process itself
 * (useManagedIdentityEnv): MSAL binds a process to the first identity endpoint it sees, as an app has
 * one for its life, so each of these runs in a fresh process. useManagedIdentityEnv fails, naming
 * this list, when a file missing from it meets a process already bound.
 */
const OWN_PROCESS = [
  'emulators/cosmos/aad*.test.ts',
  'emulators/eventgrid/entra-*.test.ts',
  'emulators/eventhubs/entra-*.test.ts',
  'emulators/identity/identity*.test.ts',
  'emulators/keyvault/*.test.ts',
  'system/web/cosmos-store.test.ts',
];

export default defineConfig({
  test: {
    // The other files share their processes (a fresh process per file loaded the SDKs and the
    // project's modules again for each: ~100 s of a clean run's ~530 s of test-file time).
    projects: [
      { extends: true, test: { name: 'shared', include: ALL, exclude: OWN_PROCESS, isolate: false } },
      { extends: true, test: { name: 'own process', include: OWN_PROCESS, isolate: true } },
    ],
    // Test files start real processes and spend much of their time waiting on them: on two cores, three
    // files at once keep both busy (a clean run took 251 s with two, 182 s with three, 183 s with four).
    maxWorkers: 3,
    // A range of free ports per worker (see the file).
    setupFiles: ['emulators/core/test-setup.ts'],
    // Generous: they only bound a hang. Tests wait on state, and a busy shared machine can make a stack
    // start or stop take many times its usual second.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    env: { PACT_DO_NOT_TRACK: 'true' },
    // TASKSTACK_TARGET=compose runs the suite's targets against docker-compose.yml (system/deploy/README.md).
    globalSetup: process.env.TASKSTACK_TARGET === 'compose' ? ['system/deploy/compose-setup.ts'] : [],
  },
});
