/**
 * The blob trigger's benchmark: blob storage (Azurite) and the host with one trivial blob-triggered
 * function, each in its own process as the launcher runs them. N blobs are uploaded as fast as the
 * storage takes them (the baseline: the upload rate, in the same run) while the host runs them; then,
 * once every blob has run, the CPU both processes use over one idle sweep cycle (what they cost once
 * caught up), and their memory.
 */
import { readFileSync } from 'node:fs';
import { BlobServiceClient } from '@azure/storage-blob';
import { timed } from '../../bench/measure.ts';
import { testDataDir } from '../core/testing.ts';
import { type ComponentUnderTest, descendants, startComponent } from '../stack/test-support.ts';
import { appPath } from './test/helpers.ts';

/**
 * Without blob events, a quiet container of 10,000 blobs is swept every 20 s (the runtime's budget of
 * 5,000 listed blobs per 10 s): a shorter window would see one sweep, or none, by chance.
 */
const IDLE_WINDOW_MS = 20_000;
/** The host gave up (or hangs) when no blob has run for this long: longer than that idle sweep cycle. */
const STALLED_MS = 30_000;
/** Linux clock ticks per second (USER_HZ), the unit of utime/stime in /proc/<pid>/stat. */
const TICKS_PER_SEC = 100;

/** CPU seconds used so far by processes `pids` (those that still exist). */
function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    } catch {}
  }
  return ticks / TICKS_PER_SEC;
}

/** The CPU processes `pids` use over `IDLE_WINDOW_MS`, in % of one core. */
async function idleCpuPercent(pids: number[]): Promise<number> {
  const before = cpuSeconds(pids);
  await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
  return ((cpuSeconds(pids) - before) / (IDLE_WINDOW_MS / 1000)) * 100;
}

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

const tree = (component: ComponentUnderTest) => {
  const pid = component.pid ?? 0;
  return [pid, ...descendants(pid)];
};

/** Uploads `count` small blobs with `concurrency` uploads in flight; resolves once all are stored. */
async function upload(service: BlobServiceClient, count: number, concurrency: number) {
  const container = service.getContainerClient('tasks');
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const body = JSON.stringify({ TaskId: next, Title: `task ${next}` });
        await container
          .getBlockBlobClient(`bench-${String(next++).padStart(6, '0')}.json`)
          .upload(body, Buffer.byteLength(body));
      }
    }),
  );
}

export async function benchBlobTrigger<T = undefined>(
  options: {
    blobs?: number;
    concurrency?: number;
    maxCatchUpMs?: number;
    /** Another benchmark's wait, run during the idle window (which measures only these two processes). */
    whileIdle?: () => Promise<T>;
  } = {},
): Promise<{
  blobsPerSec: number;
  uploadsPerSec: number;
  /** NaN when the host had not caught up within `maxCatchUpMs`: it was still at work, not idle. */
  idleCpuPercentAfter: number;
  /** Blobs run when the bench stopped waiting (`blobs` once caught up). */
  ran: number;
  azuriteRssMb: number;
  hostRssMb: number;
  /** What `whileIdle` resolved with. */
  whileIdle: T | undefined;
}> {
  const { blobs = 10_000, concurrency = 32, maxCatchUpMs = 300_000 } = options;
  const data = testDataDir();
  const blob = await startComponent('blob', { port: 0 }, data.dir);
  let host: ComponentUnderTest | undefined;
  try {
    const connectionString = blob.endpoints.connectionString as string;
    const settings = { AzureWebJobsStorage: connectionString, StorageConnection: connectionString };
    // As the stack wires it: the host is told of new blobs by the store's blob events.
    const blobEvents = { [blob.endpoints.blob as string]: blob.endpoints.events as string };
    host = await startComponent(
      'functions',
      { port: 0, appDir: appPath('app-blob-bench'), settings, blobEvents },
      data.dir,
    );
    const output = host.output;
    let seen = 0;
    let done = 0;
    const completed = () => {
      for (; seen < output.length; seen++)
        if (output[seen]?.startsWith("Executed 'Functions.ProcessTask' (Succeeded")) done++;
      return done;
    };

    const service = BlobServiceClient.fromConnectionString(connectionString);
    const began = performance.now();
    const { uploadsPerSec, lastAt } = await timed(
      `${blobs.toLocaleString('en-US')} blobs uploaded and run`,
      async () => {
        await upload(service, blobs, concurrency);
        const uploadsPerSec = blobs / ((performance.now() - began) / 1000);
        // The host catches up, or the bench gives up waiting (time out, or no progress) and reports the
        // rate it reached.
        const deadline = performance.now() + maxCatchUpMs;
        let lastAt = performance.now();
        for (
          let last = completed();
          last < blobs && performance.now() < deadline && performance.now() - lastAt < STALLED_MS;
        ) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          if (completed() > last) [last, lastAt] = [done, performance.now()];
        }
        return { uploadsPerSec, lastAt };
      },
    );
    const blobsPerSec = done / ((lastAt - began) / 1000);

    const [idleCpuPercentAfter, whileIdle] = await Promise.all([
      done < blobs ? Number.NaN : idleCpuPercent([...tree(blob), ...tree(host)]),
      options.whileIdle?.(),
    ]);
    const azurite =
      descendants(blob.pid ?? 0).find((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('azurite'),
      ) ?? 0;
    return {
      blobsPerSec,
      uploadsPerSec,
      idleCpuPercentAfter,
      ran: done,
      azuriteRssMb: rssMb(azurite),
      hostRssMb: rssMb(host.pid ?? 0),
      whileIdle,
    };
  } finally {
    await host?.stop();
    await blob.stop();
    data.remove();
  }
}
