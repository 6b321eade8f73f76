/**
 * Throughput of the Cosmos emulator through @azure/cosmos: creates, then point reads, 16 at a time,
 * in a temporary data directory (persistence on), after a warm-up round. Client and emulator share this process.
 */
import { Agent } from 'node:https';
import { CosmosClient } from '@azure/cosmos';
import { KEEP_ALIVE, median, throughput } from '../../bench/measure.ts';
import { startEmulator, testContext, testDataDir } from '../core/testing.ts';
import cosmos from './index.ts';

/**
 * Documents created, then read, per round. Rounds of 1,000 give the medians rounds of 3,000 gave (each
 * round's rate is printed beside them) in a third of the time; the store keeps them in a Map and appends
 * to a log far below its compaction size either way, so the container's size does not enter the rate.
 */
const DOCS = 1000;
const CONCURRENCY = 16;
const ROUNDS = 3;

export async function benchCosmos(): Promise<{
  readsPerSec: number;
  createsPerSec: number;
  /** Each round's rate, in order: the spread the medians are taken from. */
  readsPerRound: number[];
  createsPerRound: number[];
}> {
  const data = testDataDir();
  const context = await testContext(data.dir);
  const running = await startEmulator(
    cosmos,
    { port: 0, issuer: 'https://127.0.0.1:9/none/v2.0', jwksUri: 'https://127.0.0.1:9/none/keys' },
    context,
  );
  // Trust the data directory's CA explicitly: this process may not have NODE_EXTRA_CA_CERTS.
  const client = new CosmosClient({
    endpoint: running.endpoints.cosmos as string,
    key: context.secrets.cosmosKey,
    agent: new Agent({ ca: context.tls.ca, ...KEEP_ALIVE }),
  });
  try {
    const { database } = await client.databases.createIfNotExists({ id: 'bench' });
    const { container } = await database.containers.createIfNotExists({ id: 'items', partitionKey: '/id' });
    const creates: number[] = [];
    const reads: number[] = [];
    // Round 0 warms up (connections, JIT), as the baseline does; it is not counted.
    for (let round = 0; round <= ROUNDS; round += 1) {
      const id = (index: number) => `r${round}-${index}`;
      const body = (index: number) => ({
        id: id(index),
        title: `task ${index}`,
        done: false,
        tags: ['a', 'b'],
      });
      const created = await throughput(DOCS, CONCURRENCY, (index) => container.items.create(body(index)));
      const read = await throughput(DOCS, CONCURRENCY, (index) =>
        container.item(id(index), id(index)).read(),
      );
      if (round === 0) continue;
      creates.push(created);
      reads.push(read);
    }
    return {
      readsPerSec: Math.round(median(reads)),
      createsPerSec: Math.round(median(creates)),
      readsPerRound: reads.map(Math.round),
      createsPerRound: creates.map(Math.round),
    };
  } finally {
    client.dispose();
    await running.stop();
    data.remove();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchCosmos());
