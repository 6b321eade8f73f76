import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import { start } from './launcher.ts';

const data = testDataDir();
afterAll(() => data.remove());

/** This process's children that run a component (the test starts the stack in-process). */
function componentProcesses(): string[] {
  return readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .flatMap((pid) => {
      try {
        const ppid = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1];
        const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
        return Number(ppid) === process.pid && command.includes('run-cached.cjs') ? [command] : [];
      } catch {
        return []; // gone meanwhile
      }
    });
}

// The apps' processes are forked while the services start (they load their code meanwhile): one that
// fails to start must take down those forked for apps still waiting (functions waits for Azurite, the
// slowest service to start; web, failing here, does not).
it('leaves no process behind when an app fails to start', async () => {
  const attempt = start({
    dataDir: data.dir,
    ports: 'free',
    settings: { web: { WebAppVariant: 'C' } },
    console: false,
  });
  await expect(attempt).rejects.toThrow('web failed to start');
  // Named when one is left: the failure says which component it runs.
  await waitFor('every forked process to exit', () => componentProcesses().length === 0, 10_000).catch(
    () => undefined,
  );
  expect(componentProcesses()).toEqual([]);
});

it('names the components an app needs that were not asked for, when it fails to start without them', async () => {
  // The Functions host keeps its keys in blob storage: without Azurite its start fails.
  const attempt = start({ dataDir: data.dir, ports: 'free', components: ['functions'], console: false });
  await expect(attempt).rejects.toThrow(
    /^functions failed to start: .+ \(not running, though its settings name them: blob, eventhubs, cosmos, keyvault, eventgrid, identity\)$/,
  );
});
