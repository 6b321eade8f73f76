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
    // Test files start real processes and spend much of their time waiting on them: on two cores, three
    // files at once keep both busy (a clean run took 251 s with two, 182 s with three, 183 s with four).
    maxWorkers: 3,
    // Generous: they only bound a hang. Tests wait on state, and a busy shared machine can make a stack
    // start or stop take many times its usual second.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    env: { PACT_DO_NOT_TRACK: 'true' },
    // TASKSTACK_TARGET=compose runs the suite's targets against docker-compose.yml (system/deploy/README.md).
    globalSetup: process.env.TASKSTACK_TARGET === 'compose' ? ['system/deploy/compose-setup.ts'] : [],
  },
});
