import { join } from 'node:path';
import { z } from 'zod';
import { defineEmulator } from '../core/emulator.ts';
import { readJsonIfExists, writeFileAtomic } from '../core/files.ts';
import { loadFetch } from '../core/http.ts';
import { ACCOUNT, blobConnectionString, blobEventsUrl, startAzurite, stopAzurite } from './azurite.ts';
import { LIFECYCLE_PERIOD_MS, type LifecycleReport, runLifecycle } from './lifecycle.ts';

/**
 * Blob storage: Azurite's blob service with the topology's containers, plus the lifecycle management
 * policy Azurite lacks, run daily on the stack clock and on demand (action `runLifecycle`).
 */
export default defineEmulator({
  name: 'blob',
  options: z.object({ port: z.number().int().min(0).max(65535) }),
  async start(options, context) {
    const { child, listening } = await startAzurite({
      port: options.port,
      location: context.stateDir && join(context.stateDir, 'azurite'),
      accountKey: context.secrets.storageKey,
      onLine: context.log,
    });
    // Azurite takes most of a second to start: load the SDK meanwhile, and Node's fetch, which the
    // SDK's first request loads (its FormData check). Both once Azurite is forked: the SDK loaded
    // before held the fork, and the fetch loaded at the first request held this component's ready.
    const sdk = import('@azure/storage-blob');
    setImmediate(loadFetch);
    const port = await listening;
    const blob = `http://127.0.0.1:${port}/${ACCOUNT}`;
    const connectionString = blobConnectionString(blob, context.secrets.storageKey);
    const service = (await sdk).BlobServiceClient.fromConnectionString(connectionString);
    // The containers the topology declares exist from the start, as the Azure template creates them.
    try {
      for (const name of context.topology.storage.containers) {
        if ((await service.getContainerClient(name).createIfNotExists()).succeeded)
          context.log(`created container '${name}' from the topology`);
      }
    } catch (error) {
      await stopAzurite(child);
      throw new Error(`could not create the topology's containers: ${(error as Error).message}`);
    }
    const rules = context.topology.storage.managementPolicy.policy.rules;

    // Azure runs lifecycle policies about once a day; remember the last run so restarts keep the rhythm.
    const lastRunPath = context.stateDir && join(context.stateDir, 'lifecycle.json');
    let last = (lastRunPath && readJsonIfExists<LifecycleReport>(lastRunPath)) || undefined;
    let cancelSchedule = () => {};
    const runOnce = async () => {
      last = await runLifecycle(service, rules, context.clock);
      if (lastRunPath) writeFileAtomic(lastRunPath, JSON.stringify(last));
      if (last.deleted.length) context.log(`lifecycle: deleted ${last.deleted.join(', ')}`);
      return last;
    };
    // One run at a time: the daily run (due when the clock moves) and one asked for meanwhile would
    // otherwise race to delete the same blobs.
    let queue: Promise<unknown> = Promise.resolve();
    const run = () => {
      const next = queue.then(runOnce, runOnce);
      queue = next.catch(() => {});
      return next;
    };
    const schedule = () => {
      const next = (last ? Date.parse(last.ranAt) : context.clock.now()) + LIFECYCLE_PERIOD_MS;
      cancelSchedule = context.clock.at(next, () =>
        run()
          .catch((error: Error) => context.log(`lifecycle run failed: ${error.message}`))
          .finally(schedule),
      );
    };
    schedule();

    // A store that vanishes under us is a crash: let the launcher see it and restart the component.
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      context.crash(`Azurite exited unexpectedly (${signal ?? code})`);
    child.once('exit', onExit);

    return {
      endpoints: { blob, connectionString, events: blobEventsUrl(blob) },
      async health() {
        await service.getProperties();
      },
      async stop() {
        cancelSchedule();
        child.off('exit', onExit);
        await stopAzurite(child);
      },
      actions: { runLifecycle: run },
    };
  },
});
