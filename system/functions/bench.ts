/**
 * POST-then-GET /api/managetask round trips per second through the local Functions host (with its
 * keys, the vault's EncryptionKey, Cosmos DB over HTTPS), and where the time goes: client-observed
 * latency of each call against the function's own duration (host log) and bare Cosmos DB calls.
 */
import { readFileSync } from 'node:fs';
import { Agent as HttpsAgent } from 'node:https';
import { CosmosClient } from '@azure/cosmos';
import { callsFor, httpClient, KEEP_ALIVE, median } from '../../bench/measure.ts';
import { loadTls } from '../../emulators/core/ca.ts';
import { startAppStack } from './test-support.ts';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const TASK = JSON.stringify({ Title: 'bench', Description: 'some description', DueDate: '2030-01-01' });

const call = httpClient(CONCURRENCY);
const DURATION_MS = 3000;
const WARM_UP_MS = 1500;

/** CPU time (ms) a process has used so far: utime + stime of /proc/<pid>/stat, in clock ticks of 10 ms. */
function cpuMs(pid: number | undefined): number {
  if (!pid) return Number.NaN;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const round = (value: number) => Math.round(value * 100) / 100;

export interface ManageTaskBench {
  roundTripsPerSec: number;
  breakdown: {
    /** Client-observed medians (ms) of one POST and one GET under CONCURRENCY parallel clients. */
    postMs: number;
    getMs: number;
    /** The host's `Duration=` median for ManageTask: the function itself (vault cached, Cosmos call, crypto). */
    functionMs: number;
    /** CPU ms per round trip, by process (the bench client is this process): on 2 cores this bounds the rate. */
    cpuMsPerRoundTrip: Record<string, number>;
    /** Medians of a bare create and point read with @azure/cosmos from this process, one at a time. */
    cosmosCreateMs: number;
    cosmosReadMs: number;
  };
}

export async function benchManageTask(): Promise<ManageTaskBench> {
  // No Event Grid in this stack (its deliveries would share the two cores): PublishDocumentCreated is
  // turned off as Azure turns a function off. Left on, each of its invocations retried its publish for
  // ~6 s and failed, and the stack's stop waited for the last one (the host's stop now ends such
  // retries); the host's CPU per round trip was the same either way.
  const app = await startAppStack({
    encryptionKey: 'bench-key-0123456789abcdef012345',
    settings: { 'AzureWebJobs.PublishDocumentCreated.Disabled': 'true' },
  });
  try {
    const post: number[] = [];
    const get: number[] = [];
    const roundTrip = async () => {
      let t = performance.now();
      const created = await call(app.url('managetask'), 'POST', TASK);
      const { id } = JSON.parse(created.body) as { id: string };
      post.push(performance.now() - t);
      t = performance.now();
      const read = await call(app.url('managetask', { taskId: id }), 'GET');
      if (read.status !== 200) throw new Error(`GET answered ${read.status}`);
      get.push(performance.now() - t);
    };
    /** CONCURRENCY clients making round trips back to back for `ms`; answers how many they made. */
    const load = (ms: number) => callsFor(ms, CONCURRENCY, roundTrip);
    for (let i = 0; i < 20; i++) await roundTrip(); // warm-up: vault secret, clients
    // Warm-up under the same load: a fresh process runs its first calls partly unoptimized, its compiler
    // threads busy (a third of the host's CPU here): start-up cost, not the rate a running stack keeps.
    await load(WARM_UP_MS);
    post.length = 0;
    get.length = 0;
    const logStart = app.logs().length;

    const pids = { ...app.stack.pids(), client: process.pid };
    const cpuBefore = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
    const started = performance.now();
    const count = await load(DURATION_MS);
    const elapsed = performance.now() - started;
    const cpuMsPerRoundTrip = Object.fromEntries(
      Object.entries(pids).map(([name, pid]) => [name, round((cpuMs(pid) - (cpuBefore[name] ?? 0)) / count)]),
    );

    const durations = app
      .logs()
      .slice(logStart)
      .flatMap(
        (e) =>
          /^Executed 'Functions\.ManageTask' \(Succeeded, .*Duration=(\d+)ms\)/.exec(e.message)?.[1] ?? [],
      )
      .map(Number);
    // This process was not started by the launcher (no NODE_EXTRA_CA_CERTS): trust the stack's CA here.
    const { ca } = await loadTls(app.stack.description.dataDir);
    const cosmos = new CosmosClient({
      connectionString: app.stack.description.connections.DocumentDbConnection,
      agent: new HttpsAgent({ ca, ...KEEP_ALIVE }),
    });
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
        cpuMsPerRoundTrip,
        cosmosCreateMs: round(median(creates)),
        cosmosReadMs: round(median(reads)),
      },
    };
  } finally {
    await app.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchManageTask());
