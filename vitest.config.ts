import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { loadTls } from './emulators/core/ca.ts';

// One local CA for every test's data directory, created before the test processes fork so that
// they trust it from birth (Node reads NODE_EXTRA_CA_CERTS only at process start).
const testCaDir = fileURLToPath(new URL('./.taskstack/test', import.meta.url));
const { caPath } = await loadTls(testCaDir);
process.env.NODE_EXTRA_CA_CERTS = caPath;
process.env.TASKSTACK_TEST_CA_DIR = testCaDir;

export default defineConfig({
  test: {
    include: ['{emulators,system,gateway-sim,contracts,scenarios}/**/*.test.ts'],
    // Test files start real processes; two cores, so at most two files at once.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: { PACT_DO_NOT_TRACK: 'true' },
  },
});
