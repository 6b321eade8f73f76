/**
 * The blob trigger's benchmark: blob storage (Azurite) and the host with one trivial blob-triggered
 * function, each in its own process as the launcher runs them. N blobs are uploaded as fast as the
 * storage takes them (the baseline: the upload rate, in the same run) while the host runs them; then
 * the CPU both processes use in the 5 s after the last invocation (what they cost once caught up), and
 * their memory.
 */
import { readFileSync } from 'node:fs';
import { BlobServiceClient } from '@azure/storage-blob';
import { testDataDir } from '../core/testing.ts';
import { type ComponentUnderTest, descendants, startComponent } from '../stack/test-support.ts';
import { appPath } from './test/helpers.ts';

const IDLE_WINDOW_MS = 5000;
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

export async function benchBlobTrigger(
  options: { blobs?: number; concurrency?: number; maxCatchUpMs?: number } = {},
): Promise<{
  blobsPerSec: number;
  uploadsPerSec: number;
  idleCpuPercentAfter: number;
  azuriteRssMb: number;
  hostRssMb: number;
}> {
  const { blobs = 10_000, concurrency = 32, maxCatchUpMs = 15_000 } = options;
  const data = testDataDir();
  const blob = await startComponent('blob', { port: 0 }, data.dir);
  let host: ComponentUnderTest | undefined;
  try {
    const connectionString = blob.endpoints.connectionString as string;
    const settings = { AzureWebJobsStorage: connectionString, StorageConnection: connectionString };
    host = await startComponent(
      'functions',
      { port: 0, appDir: appPath('app-blob-bench'), settings },
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
    await upload(service, blobs, concurrency);
    const uploadsPerSec = blobs / ((performance.now() - began) / 1000);
    // The host catches up, or the bench gives up waiting and reports the rate it reached.
    const deadline = performance.now() + maxCatchUpMs;
    let lastAt = performance.now();
    for (let last = completed(); last < blobs && performance.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (completed() > last) [last, lastAt] = [done, performance.now()];
    }
    const blobsPerSec = done / ((lastAt - began) / 1000);

    const pids = [...tree(blob), ...tree(host)];
    const cpuBefore = cpuSeconds(pids);
    await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
    const idleCpuPercentAfter = ((cpuSeconds(pids) - cpuBefore) / (IDLE_WINDOW_MS / 1000)) * 100;
    const azurite =
      descendants(blob.pid ?? 0).find((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('azurite'),
      ) ?? 0;
    return {
      blobsPerSec,
      uploadsPerSec,
      idleCpuPercentAfter,
      azuriteRssMb: rssMb(azurite),
      hostRssMb: rssMb(host.pid ?? 0),
    };
  } finally {
    await host?.stop();
    await blob.stop();
    data.remove();
  }
}
