import { spawn } from 'node:child_process';
import { Agent, createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { loadTls } from '../emulators/core/ca.ts';
import { testDataDir } from '../emulators/core/testing.ts';
import { callsFor, httpClient, KEEP_ALIVE, median, rounds, throughput, treeMemoryMb } from './measure.ts';

/**
 * The floor any HTTPS emulator stands on: a bare node:https server answering a small JSON document,
 * called over keep-alive TLS at the same concurrency as the emulator benchmarks. Measured as they are:
 * a warm-up round, then the median of three. It was measured cold, once: 8,000–9,000 calls/s against
 * ~22,000 warm, which made the Cosmos ratio look twice as good as it is.
 */
export async function bareHttpsRequestsPerSec(total = 3000, concurrency = 16): Promise<number> {
  const data = testDataDir();
  const tls = await loadTls(data.dir);
  const body = JSON.stringify({ id: 'r0-1', title: 'task 1', done: false, tags: ['a', 'b'], _etag: '"0"' });
  const server = createServer({ cert: tls.cert, key: tls.key, keepAlive: true }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const agent = new Agent({ ca: tls.ca, ...KEEP_ALIVE });
  const get = () =>
    new Promise<void>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/dbs/bench/colls/items/docs/r0-1', agent }, (res) => {
        res.resume().on('end', resolve);
      })
        .on('error', reject)
        .end();
    });
  try {
    await throughput(total, concurrency, get);
    return median(await rounds(3, () => throughput(total, concurrency, get)));
  } finally {
    agent.destroy();
    server.closeAllConnections();
    server.close();
    data.remove();
  }
}

/**
 * The floor every process of the stack stands on: `count` idle bare Node processes (an interval and
 * nothing else), as many as the stack has. Their PSS and RSS summed once all have started.
 */
export async function bareNodeProcesses(count: number): Promise<{ pss: number; rss: number }> {
  const children = Array.from({ length: count }, () =>
    spawn(process.execPath, ['-e', "console.log('ready'); setInterval(() => {}, 60_000)"], {
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  try {
    await Promise.all(children.map((child) => new Promise((resolve) => child.stdout.once('data', resolve))));
    const { pss, rss } = treeMemoryMb(children.map((child) => child.pid as number));
    return { pss, rss };
  } finally {
    for (const child of children) child.kill();
  }
}

/** A bare node:http server of tasks: POST stores one (given an id), GET ?taskId= answers it. */
const BARE_TASKS_SERVER = `const tasks = new Map();
const { randomUUID } = require('node:crypto');
require('node:http').createServer((req, res) => {
  if (req.method === 'GET') {
    const id = new URL(req.url, 'http://x').searchParams.get('taskId');
    return res.writeHead(200, { 'content-type': 'application/json' }).end(tasks.get(id));
  }
  let body = '';
  req.setEncoding('utf8').on('data', (chunk) => { body += chunk; }).on('end', () => {
    const id = randomUUID();
    const task = JSON.stringify({ id, ...JSON.parse(body) });
    tasks.set(id, task);
    res.writeHead(200, { 'content-type': 'application/json' }).end(task);
  });
}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;

/**
 * The floor of the managetask round trips: POST a task, then GET it by id, on a bare node:http server
 * in a process of its own (as the functions host is), from the same client at the same concurrency.
 * A warm-up round, then the median of three.
 */
export async function bareRoundTripsPerSec(concurrency: number, ms = 1000): Promise<number> {
  const server = spawn(process.execPath, ['-e', BARE_TASKS_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<string>((resolve) =>
      server.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())),
    );
    const url = `http://127.0.0.1:${port}/api/managetask`;
    const call = httpClient(concurrency, { 'content-type': 'application/json' });
    const roundTrip = async () => {
      const created = await call(url, 'POST', JSON.stringify({ Title: 'bench', Description: 'd' }));
      await call(`${url}?taskId=${JSON.parse(created.body).id}`);
    };
    const perSec = async () => ((await callsFor(ms, concurrency, roundTrip)) * 1000) / ms;
    await perSec();
    return median(await rounds(3, perSec));
  } finally {
    server.kill();
  }
}
