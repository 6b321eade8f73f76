/**
 * The Event Hubs trigger at the end of a partition's claim, as the extension's PartitionProcessor meets
 * it, fed by the official producer: a stop lets the run under way end but runs none of the batch's other
 * events and checkpoints nothing; a partition another reader takes ends its claim alone, and claimed
 * again it counts its batches afresh for `batchCheckpointFrequency` (2 here).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventHubConsumerClient, latestEventPosition } from '@azure/event-hubs';
import { expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { appPath, eventHubsStoresFor, readLog } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
const releaseFile = join(data.dir, 'release');
let host: ComponentUnderTest | undefined;
const stores = eventHubsStoresFor(data, () => host);

/** The app's function `fn` alone (both read the one consumer group). */
function startHost(fn: 'one' | 'many') {
  return startComponent(
    'functions',
    {
      port: 0,
      appDir: appPath('app-eventhub-close'),
      logFile,
      settings: {
        AzureWebJobsStorage: stores().blob.endpoints.connectionString as string,
        StreamHubConnection: stores().eventHubs.endpoints.connectionString as string,
        RELEASE_FILE: releaseFile,
        [`AzureWebJobs.${fn === 'one' ? 'many' : 'one'}.Disabled`]: 'true',
      },
    },
    data.dir,
  );
}

/** The sequence number of the last event of the batch that logged `bodies`. */
const batchSeq = (bodies: string) => Number(logged(`batch ${bodies} seq=`)[0]?.message.split('seq=')[1]);
const logged = (start: string) => readLog(logFile).filter((e) => e.message.startsWith(start));
const closed = (partition: string, reason: string) =>
  logged(`Event Hubs 'Functions.`).filter((e) =>
    e.message.endsWith(`partition ${partition}: CloseAsync, ${reason}`),
  );
async function checkpointed(partition: string): Promise<number | undefined> {
  const blob = stores()
    .storage.getContainerClient('azure-webjobs-eventhub')
    .getBlobClient(`127.0.0.1/taskevents/$default/checkpoint/${partition}`);
  if (!(await blob.exists())) return undefined;
  return Number((await blob.getProperties()).metadata?.sequencenumber);
}
const send = (partitionId: string, ...bodies: string[]) =>
  stores().producer.sendBatch(
    bodies.map((body) => ({ body })),
    { partitionId },
  );

it('counts batches per claim: a partition lost and claimed again starts its checkpoint count afresh', async () => {
  host = await startHost('many');
  for (const body of ['p-1', 'p-2', 'p-3']) {
    await send('1', body);
    await waitFor(body, () => logged(`batch ${body} `).length === 1, 30_000);
  }
  // Two batches: a checkpoint at p-2; p-3 is the first of the next two.
  await waitFor('the checkpoint at p-2', async () => (await checkpointed('1')) === batchSeq('p-2'));
  // Another reader takes partition 1 with a higher owner level, as another instance's processor would.
  const thief = new EventHubConsumerClient(
    '$Default',
    stores().eventHubs.endpoints.connectionString as string,
    'taskevents',
  );
  const subscription = thief.subscribe(
    '1',
    { async processEvents() {}, async processError() {} },
    { ownerLevel: 1, startPosition: latestEventPosition },
  );
  try {
    // While it holds the partition, load balancing (a round every 0.25 s: the app's host.json) claims it
    // again and loses it again. The first of these rounds read the ownership the first loss had given up;
    // a processor restart, were a loss to cause one, would come one round (0.25 s) after that loss. The
    // round after the third loss, which claims the partition for good, begins two rounds (0.5 s) after
    // that first round: p-3 runs again after any such restart.
    await waitFor('partition 1 lost 3 times', () => closed('1', 'OwnershipLost').length >= 3, 30_000);
  } finally {
    await subscription.close();
    await thief.close();
  }
  // Claimed again, the partition resumes after p-2: p-3 runs again, the new claim's first batch.
  await waitFor('p-3 again', () => logged('batch p-3 ').length === 2, 30_000);
  await send('1', 'p-4');
  await waitFor('p-4', () => logged('batch p-4 ').length === 1, 30_000);
  await waitFor('the checkpoint at p-4', async () => (await checkpointed('1')) === batchSeq('p-4'), 10_000);
  // Partition 0 was read on throughout: its claim did not end, the processor was not restarted.
  expect(closed('0', 'Shutdown')).toEqual([]);
  expect(logged(`Event Hubs 'Functions.many' restarts its processor`)).toEqual([]);
  expect(logged('batch p-')).toHaveLength(5);
}, 120_000);

it('lets the run under way end at a stop, runs none of its batch after it and checkpoints nothing', async () => {
  await host?.stop();
  host = await startHost('one');
  const stopping = host;
  await send('0', 'hold-1', 's-2', 's-3');
  await waitFor('hold-1 running', () => logged('started hold-1').length === 1, 30_000);
  const ended = closed('0', 'Shutdown').length;
  const stopped = stopping.stop();
  await waitFor('the claim of partition 0 ended', () => closed('0', 'Shutdown').length > ended, 20_000);
  writeFileSync(releaseFile, '');
  await stopped;
  // The stop waited for the run, within its grace.
  expect(logged('finished hold-1')).toHaveLength(1);
  expect(stopping.output.join('\n')).not.toContain('did not stop within');
  expect(logged('started s-')).toEqual([]);
  expect(await checkpointed('0')).toBeUndefined();
  // Nothing was checkpointed: the next start runs the whole batch again (at least once).
  host = await startHost('one');
  await waitFor('s-3', () => logged('finished s-3').length === 1, 30_000);
  expect(logged('started hold-1')).toHaveLength(2);
  expect(logged('started s-2')).toHaveLength(1);
}, 120_000);
