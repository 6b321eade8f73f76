/**
 * `npm run bench`: medians of repeated rounds, with ratios against a baseline measured in the same run.
 * Nothing here asserts: the figures are for reading and for issue closing notes.
 */
import { cpus } from 'node:os';
import { join } from 'node:path';
import { loadApps, repositoryRoot } from '../emulators/core/apps.ts';
import { testDataDir } from '../emulators/core/testing.ts';
import { benchCosmos } from '../emulators/cosmos/bench.ts';
import { benchEventHubs } from '../emulators/eventhubs/bench.ts';
import { benchFunctionsHost } from '../emulators/functions-host/bench.ts';
import { benchBlobTrigger } from '../emulators/functions-host/blob-bench.ts';
import { benchGateway } from '../gateway-sim/bench.ts';
import { benchManageTask } from '../system/functions/bench.ts';
import { benchWebApp } from '../system/web/bench.ts';
import { bareHttpsRequestsPerSec, bareNodeProcesses, bareRoundTripsPerSec } from './baseline.ts';
import { partSeconds, row, timed } from './measure.ts';
import { benchStarts, FOUNDATION, foundationMemory, userStack } from './stack.ts';

const benchBegan = performance.now();
console.log(`taskstack benchmarks — node ${process.version}, ${cpus().length} cores\n`);

// The blob trigger's bench ends with a 20 s idle window, in which only its two processes' CPU counts; a
// fresh `npm start` rests 20 s before its settled memory is read. The second runs in the first (the idle
// processes use a few % of a core meanwhile, which the CPU row shows), and the start rows run in the
// rest's first seconds: they read only times, and their stacks are gone before the settled memory is
// read (the PSS of a process is lower while others share its pages).
const fresh = testDataDir();
const warm = testDataDir();
const blobs = await timed(
  'blob trigger, `npm start` + 20 s rest with the start rows in its idle window',
  () =>
    benchBlobTrigger({
      whileIdle: () =>
        timed('the idle window: `npm start`, its 20 s rest and the start rows', async () => {
          const stack = await userStack(fresh.dir);
          const starts = benchStarts(warm.dir);
          return { stack, settled: await stack.settle(starts), starts: await starts };
        }),
    }),
);
const user = blobs.whileIdle as NonNullable<typeof blobs.whileIdle>;
const afterLoad = await timed('10,000 requests', () => user.stack.load(5000)).finally(async () => {
  await user.stack.stop();
  fresh.remove();
});

// Issue 13's table first, row by row, each with its goal.
const stack = { ...user.starts, foundationMemory: await foundationMemory(warm.dir).finally(warm.remove) };
const azurite = { name: 'Azurite alone', value: stack.azuriteMs };
// The floor of every memory row: as many idle bare Node processes as the stack has (they share the Node
// binary's pages among themselves as the stack's processes do), and one of them for a single process.
const bareNode = await timed('bare Node processes', async () => ({
  stack: await bareNodeProcesses(user.stack.memory.processes),
  foundation: await bareNodeProcesses(stack.foundationMemory.processes),
}));
const barePss = { name: `${user.stack.memory.processes} bare Node processes`, value: bareNode.stack.pss };
const bareRss = { name: `${user.stack.memory.processes} bare Node processes`, value: bareNode.stack.rss };
const oneBareRss = { name: 'a bare Node process', value: bareNode.stack.rss / user.stack.memory.processes };
row('`npm start` (fresh data dir) to stack.json', user.stack.readyMs, 'ms', '<= 2000', azurite);
row('every component start to ready', stack.startMs, 'ms', '<= 1500', azurite);
row(`  only ${FOUNDATION.join(', ')}`, stack.foundationStartMs, 'ms', '< 2000', azurite);
const host = await timed('functions host', () =>
  benchFunctionsHost({ appDir: join(repositoryRoot, loadApps().functions?.folder ?? '') }),
);
row('functions host start to ready (system app)', host.startMs, 'ms', '<= 400', azurite);
row('  of which the app loading its modules', host.appLoadMs, 'ms', undefined, {
  name: 'the host start',
  value: host.startMs,
});
row('  its `ready in` as `npm start` printed it (wall)', user.stack.hostReadyMs, 'ms', undefined, {
  name: 'the host start',
  value: host.startMs,
});
row('memory of the whole stack after start (at ready): PSS', user.stack.memory.pss, 'MB', '<= 300', barePss);
row('  the same, RSS summed over processes', user.stack.memory.rss, 'MB', undefined, bareRss);
row('  PSS settled: 20 s after ready, its start collected', user.settled.pss, 'MB', '<= 300', barePss);
row('  after 5,000 createtask + managetask: PSS', afterLoad.warm.pss, 'MB', undefined, barePss);
row('  after 10,000 createtask + managetask: PSS', afterLoad.end.pss, 'MB', '<= 450, flat', {
  name: 'after 5,000',
  value: afterLoad.warm.pss,
});
row('  the same, RSS summed over processes', afterLoad.end.rss, 'MB', undefined, bareRss);
row(`memory after start, only ${FOUNDATION.join(', ')}: PSS`, stack.foundationMemory.pss, 'MB', undefined, {
  name: `${stack.foundationMemory.processes} bare Node processes`,
  value: bareNode.foundation.pss,
});
row('trivial HTTP function via the host', host.requestsPerSec, '/s', '>= 0.6×', {
  name: 'bare node:http',
  value: host.bareRequestsPerSec,
});
const manageTask = await timed('managetask', benchManageTask);
const bareRoundTrips = await timed('bare node:http round trips', () => bareRoundTripsPerSec(8));
row('POST-then-GET managetask round trips', manageTask.roundTripsPerSec, '/s', '>= 400', {
  name: 'bare node:http',
  value: bareRoundTrips,
});
console.log(`  where the time goes: ${JSON.stringify(manageTask.breakdown)}`);
const bare = {
  name: 'bare node:https',
  value: await timed('bare node:https', () => bareHttpsRequestsPerSec()),
};
const cosmos = await timed('Cosmos', benchCosmos);
row('Cosmos point reads via @azure/cosmos', cosmos.readsPerSec, '/s', '>= 0.5×', bare);
row('Cosmos creates via @azure/cosmos', cosmos.createsPerSec, '/s', undefined, bare);
console.log(
  `  each round (reads; creates): ${cosmos.readsPerRound.join(', ')}; ${cosmos.createsPerRound.join(', ')}`,
);
row('blob trigger (10,000 blobs in tasks)', blobs.blobsPerSec, 'blobs/s', '>= 300', {
  name: 'upload rate',
  value: blobs.uploadsPerSec,
});
row('  blobs run when the bench stopped waiting (of 10,000)', blobs.ran, 'blobs', undefined, {
  name: 'uploaded',
  value: 10_000,
});
row(
  '  CPU of Azurite + host once caught up (the 20 s after the last blob ran)',
  blobs.idleCpuPercentAfter,
  '%',
  '~0',
);
row('  RSS after: Azurite', blobs.azuriteRssMb, 'MB', undefined, oneBareRss);
row('  RSS after: functions host', blobs.hostRssMb, 'MB', undefined, oneBareRss);

// The other issues' rows.
const eventHubs = await timed('Event Hubs', () => benchEventHubs());
row('Event Hubs events sent (batches of 250)', eventHubs.sendEventsPerSec, '/s');
row('Event Hubs events received', eventHubs.receiveEventsPerSec, '/s', undefined, {
  name: 'sent',
  value: eventHubs.sendEventsPerSec,
});

const web = await timed('web apps', benchWebApp);
row('web app A: GET /api/tasks (20 tasks)', web.webGetPerSec, '/s', '>= 0.8×', {
  name: 'bare Express',
  value: web.bareGetPerSec,
});
row('web app A: POST /api/tasks', web.webPostPerSec, '/s', '>= 0.8×', {
  name: 'bare Express',
  value: web.barePostPerSec,
});
row('web Create → ProcessTaskEvents log line', web.createToLogMs, 'ms', '<= 100');
row('RSS of web app A after ~12,000 requests', web.webRssMb, 'MB', '<= 90', oneBareRss);
row('RSS of web app B (idle)', web.webBRssMb, 'MB', '<= 90', oneBareRss);

const gateway = await timed('gateway', benchGateway);
row('gateway: added median latency (managetask)', gateway.addedMedianMs, 'ms', '<= 1', {
  name: 'the direct median',
  value: gateway.directMedianMs,
});
row('gateway: POST /functions/managetask', gateway.gatewayPerSec, '/s', '>= 0.8×', {
  name: 'direct to the backend',
  value: gateway.directPerSec,
});
row('gateway RSS after > 10,000 requests', gateway.gatewayRssMb, 'MB', '<= 90', oneBareRss);

row('`npm run bench` itself', (performance.now() - benchBegan) / 1000, 's', '<= 120');
// Semicolons: the parts' names have commas of their own.
console.log(`  its parts: ${partSeconds.map(([part, s]) => `${part} ${s.toFixed(0)} s`).join('; ')}`);
