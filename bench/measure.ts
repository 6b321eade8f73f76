/** Small helpers for `npm run bench`: medians of repeated rounds, ratios against a baseline, a client. */
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, type IncomingHttpHeaders, request } from 'node:http';

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

export async function rounds<T>(count: number, round: () => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < count; i++) results.push(await round());
  return results;
}

/**
 * Every bench client's keep-alive: with a timeout of its own, as node:http heeds a server's
 * `Keep-Alive: timeout=N` only to lower one. Without it a call could cross the server closing an idle
 * connection (`socket hang up`, met once in 27 runs of the gateway's bench).
 */
export const KEEP_ALIVE = { keepAlive: true, timeout: 60_000 } as const;

/**
 * An HTTP client on `maxSockets` keep-alive sockets, sending `defaultHeaders` unless told otherwise.
 * node:http rather than fetch: on two cores every millisecond the client spends is taken from the servers
 * under load, and fetch spends 3–4× as much per request.
 */
export function httpClient(maxSockets: number, defaultHeaders: Record<string, string> = {}) {
  const agent = new Agent({ ...KEEP_ALIVE, maxSockets });
  return (
    url: string,
    method = 'GET',
    body?: string,
    headers = defaultHeaders,
  ): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> =>
    new Promise((resolve, reject) => {
      const req = request(url, { method, agent, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
      });
      req.on('error', reject);
      req.end(body);
    });
}

/** Runs `work` from `concurrency` callers until `total` calls are done; returns calls per second. */
export async function throughput(
  total: number,
  concurrency: number,
  work: (i: number) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const began = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await work(next++);
    }),
  );
  return total / ((performance.now() - began) / 1000);
}

/** Runs `work` from `concurrency` callers back to back for `ms`; returns how many calls were made. */
export async function callsFor(
  ms: number,
  concurrency: number,
  work: () => Promise<unknown>,
): Promise<number> {
  let count = 0;
  const began = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() - began < ms) {
        await work();
        count++;
      }
    }),
  );
  return count;
}

/** Wall seconds of each part of the run, in the order they ran: where `npm run bench` spends its time. */
export const partSeconds: [part: string, seconds: number][] = [];

export async function timed<T>(part: string, work: () => Promise<T>): Promise<T> {
  const began = performance.now();
  try {
    return await work();
  } finally {
    partSeconds.push([part, (performance.now() - began) / 1000]);
  }
}

export function row(
  name: string,
  value: number,
  unit: string,
  goal?: string,
  baseline?: { name: string; value: number },
) {
  const ratio = baseline ? `  (${(value / baseline.value).toFixed(2)}× ${baseline.name})` : '';
  console.log(
    `${name.padEnd(48)} ${value.toFixed(value < 10 ? 2 : 0).padStart(9)} ${unit.padEnd(8)}${ratio}${goal ? `  goal ${goal}` : ''}`,
  );
}

/**
 * Memory (MB) of the given processes and all their descendants, from /proc: RSS summed (counts the
 * Node binary's shared pages once per process) and PSS summed (shared pages split between sharers:
 * what the stack really occupies), and how many processes that is.
 */
export function treeMemoryMb(roots: number[]): { rss: number; pss: number; processes: number } {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {}
  }
  const inTree = new Set(roots);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, parent] of parents)
      if (inTree.has(parent) && !inTree.has(pid)) grew = inTree.add(pid).size > 0;
  }
  const kb = (pid: number, file: string, field: string) =>
    Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/${file}`, 'utf8'))?.[1] ?? 0);
  let rss = 0;
  let pss = 0;
  let processes = 0;
  for (const pid of inTree) {
    try {
      const [pidRss, pidPss] = [kb(pid, 'status', 'VmRSS'), kb(pid, 'smaps_rollup', 'Pss')];
      rss += pidRss;
      pss += pidPss;
      processes++;
    } catch {} // exited since the listing (a short-lived helper): it occupies nothing now
  }
  return { rss: rss / 1024, pss: pss / 1024, processes };
}
