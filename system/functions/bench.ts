/**
 * POST-then-GET /api/managetask round trips per second through the local Functions host (with its
 * keys, the vault's EncryptionKey, Cosmos DB over HTTPS), and where the time goes: client-observed
 * latency of each call against the function's own duration (host log) and bare Cosmos DB calls.
 */
import { CosmosClient } from '@azure/cosmos';
import { startAppStack } from './test-support.ts';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const DURATION_MS = 3000;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const round = (value: number) => Math.round(value * 100) / 100;

export interface ManageTaskBench {
  roundTripsPerSec: number;
  breakdown: {
    /** Client-observed medians (ms) of one POST and one GET under CONCURRENCY parallel clients. */
    postMs: number;
    getMs: number;
    /** The host's `Duration=` median for ManageTask: the function itself (vault cached, Cosmos call, crypto). */
    functionMs: number;
    /** Medians of a bare create and point read with @azure/cosmos from this process, one at a time. */
    cosmosCreateMs: number;
    cosmosReadMs: number;
  };
}

export async function benchManageTask(): Promise<ManageTaskBench> {
  const app = await startAppStack({ encryptionKey: 'bench-key-0123456789abcdef012345' });
  try {
    const post: number[] = [];
    const get: number[] = [];
    const roundTrip = async () => {
      let t = performance.now();
      const created = await fetch(app.url('managetask'), {
        method: 'POST',
        body: JSON.stringify({ Title: 'bench', Description: 'some description', DueDate: '2030-01-01' }),
      });
      const { id } = (await created.json()) as { id: string };
      post.push(performance.now() - t);
      t = performance.now();
      const read = await fetch(app.url('managetask', { taskId: id }));
      if (read.status !== 200) throw new Error(`GET answered ${read.status}`);
      await read.arrayBuffer();
      get.push(performance.now() - t);
    };
    for (let i = 0; i < 20; i++) await roundTrip(); // warm-up: vault secret, clients, JIT
    post.length = 0;
    get.length = 0;
    const logStart = app.logs().length;

    let count = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (performance.now() - started < DURATION_MS) {
          await roundTrip();
          count++;
        }
      }),
    );
    const elapsed = performance.now() - started;

    const durations = app
      .logs()
      .slice(logStart)
      .flatMap(
        (e) =>
          /^Executed 'Functions\.ManageTask' \(Succeeded, .*Duration=(\d+)ms\)/.exec(e.message)?.[1] ?? [],
      )
      .map(Number);
    const cosmos = new CosmosClient(app.stack.description.connections.DocumentDbConnection ?? '');
    const container = cosmos.database('TasksDB').container('Tasks');
    const creates: number[] = [];
    const reads: number[] = [];
    for (let i = 0; i < 200; i++) {
      const id = crypto.randomUUID();
      let t = performance.now();
      await container.items.create({ id, Title: 'bare' });
      creates.push(performance.now() - t);
      t = performance.now();
      await container.item(id, id).read();
      reads.push(performance.now() - t);
    }
    cosmos.dispose();
    return {
      roundTripsPerSec: Math.round((count * 1000) / elapsed),
      breakdown: {
        postMs: round(median(post)),
        getMs: round(median(get)),
        functionMs: round(median(durations)),
        cosmosCreateMs: round(median(creates)),
        cosmosReadMs: round(median(reads)),
      },
    };
  } finally {
    await app.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchManageTask());
