/**
 * `npm run bench`: medians of repeated rounds, with ratios against a baseline measured in the same run.
 * Nothing here asserts: the figures are for reading and for issue closing notes.
 */
import { cpus } from 'node:os';
import { benchCosmos } from '../emulators/cosmos/bench.ts';
import { benchEventHubs } from '../emulators/eventhubs/bench.ts';
import { bareHttpsRequestsPerSec } from './baseline.ts';
import { row } from './measure.ts';
import { benchStack } from './stack.ts';

console.log(`taskstack benchmarks — node ${process.version}, ${cpus().length} cores\n`);

const stack = await benchStack();
row('stack start to ready (all components, warm)', stack.startMs, 'ms', '< 2000', {
  name: 'Azurite alone',
  value: stack.azuriteMs,
});
row('stack resident memory after start (CLI)', stack.rssMb, 'MB', '< 300');

const bare = { name: 'bare node:https', value: await bareHttpsRequestsPerSec() };
const cosmos = await benchCosmos();
row('Cosmos point reads via @azure/cosmos', cosmos.readsPerSec, '/s', '>= 1500', bare);
row('Cosmos creates via @azure/cosmos', cosmos.createsPerSec, '/s', undefined, bare);

const eventHubs = await benchEventHubs();
row('Event Hubs events sent (batches of 250)', eventHubs.sendEventsPerSec, '/s');
row('Event Hubs events received', eventHubs.receiveEventsPerSec, '/s');
