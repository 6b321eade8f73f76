/**
 * `npm run bench`: medians of repeated rounds, with ratios against a baseline measured in the same run.
 * Nothing here asserts: the figures are for reading and for issue closing notes.
 */
import { row } from './measure.ts';
import { benchStack } from './stack.ts';

console.log(`taskstack benchmarks — node ${process.version}, ${(await import('node:os')).cpus().length} cores\n`);

const stack = await benchStack();
row('stack start to ready (all components, warm)', stack.startMs, 'ms', '< 2000', { name: 'Azurite alone', value: stack.azuriteMs });
row('stack resident memory after start (CLI)', stack.rssMb, 'MB', '< 300');
