/**
 * The gateway's benchmark: the same small POST straight to a backend and through the gateway (HTTPS, a
 * subscription key, the shipped policies with a rate limit too loose to trip), each server in its own
 * process. Median latency of sequential calls, throughput of concurrent ones, and the gateway's RSS
 * after 10,000 requests. `tsx gateway-sim/bench.ts` prints them; `benchGateway()` answers them.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createServer, Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { fileURLToPath } from 'node:url';
import { KEEP_ALIVE, median, rounds, throughput } from '../bench/measure.ts';
import { bundle } from '../emulators/core/bundle.mjs';
import { loadTls } from '../emulators/core/ca.ts';
import { heapFlags, withMallocEnv } from '../emulators/core/heap.ts';
import { listen } from '../emulators/core/http.ts';
import { startEmulator, testContext, testDataDir } from '../emulators/core/testing.ts';
import gateway from './index.ts';
import { copyArtifacts, editArtifact } from './testing.ts';

const BODY = JSON.stringify({
  Title: 'Benchmark',
  Description: 'through the gateway',
  DueDate: '2026-12-01',
});

/** In a child: a backend answering every request with its body, or the gateway in front of `backend`. */
async function child(role: string, backend?: string, dataDir?: string) {
  if (role === 'backend') {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.concat(chunks)),
      );
    });
    return { url: `http://127.0.0.1:${await listen(server, 0)}` };
  }
  const dir = copyArtifacts(dataDir as string);
  editArtifact(dir, 'policies/apis/task-manager-functions-api.xml', (text) =>
    text.replace('calls="5"', 'calls="100000000"'),
  );
  const context = await testContext(dataDir as string, { inMemory: true });
  // The gateway's last log lines (one per request, with the reason for a failure), kept for a failed bench to
  // show: held in memory, as writing every line out would add to the latency measured.
  context.log = (line) => {
    if (recentLog.push(line) > 50) recentLog.shift();
  };
  const running = await startEmulator(
    gateway,
    {
      port: 0,
      artifactsDir: dir,
      namedValues: {
        FunctionAppBaseUrl: backend as string,
        WebAppBaseUrl: backend as string,
        FunctionKey: context.secrets.functionKey,
        AuthUrl: 'https://127.0.0.1:1',
        TenantId: context.secrets.tenantId,
        EntraClientId: 'bench',
        EntraClientSecret: 'bench',
      },
    },
    context,
  );
  return { url: running.endpoints.gatewayUrl as string, key: context.secrets.subscriptionKey };
}

const recentLog: string[] = [];

if (process.argv[2] === 'child') {
  const answer = await child(process.argv[3] as string, process.argv[4], process.argv[5]);
  process.send?.(answer);
  process.on('message', (message) => {
    if (message === 'exit') process.exit(0);
    process.send?.(message === 'log' ? recentLog : process.memoryUsage().rss);
  });
}

/** Asks a child for its RSS or its last log lines; refused if it has exited. */
function ask<T>(child: ChildProcess, what: 'rss' | 'log'): Promise<T> {
  return new Promise((resolve, reject) => {
    if (child.exitCode !== null || child.signalCode !== null)
      return reject(new Error(`the child exited (${child.exitCode ?? child.signalCode})`));
    child.once('message', (message) => resolve(message as T));
    child.send(what);
  });
}

/**
 * A child running this file on bare Node, as the stack runs its components (no TypeScript loader; the
 * gateway with its heap flags and the launcher's malloc settings).
 */
async function spawn(...args: string[]): Promise<{ process: ChildProcess; url: string; key?: string }> {
  const gateway = args[0] === 'gateway';
  const started = fork(await bundle(fileURLToPath(import.meta.url)), ['child', ...args], {
    execArgv: gateway ? heapFlags('gateway') : [],
    env: gateway ? withMallocEnv(process.env) : process.env,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    started.once('message', (message: { url: string; key?: string }) =>
      resolve({ process: started, ...message }),
    );
    started.once('exit', (code) => reject(new Error(`bench child ${args[0]} exited (${code})`)));
  });
}

export async function benchGateway(): Promise<{
  directMedianMs: number;
  gatewayMedianMs: number;
  addedMedianMs: number;
  directPerSec: number;
  gatewayPerSec: number;
  gatewayRssMb: number;
}> {
  const data = testDataDir();
  // This process may not have NODE_EXTRA_CA_CERTS: trust the data directory's CA explicitly.
  const { ca } = await loadTls(data.dir);
  const backend = await spawn('backend');
  const front = await spawn('gateway', backend.url, data.dir);
  const httpAgent = new HttpAgent({ ...KEEP_ALIVE, maxSockets: 16 });
  const httpsAgent = new HttpsAgent({ ca, ...KEEP_ALIVE, maxSockets: 16 });
  const post = (url: string, headers: Record<string, string> = {}) =>
    new Promise<void>((resolve, reject) => {
      const secure = url.startsWith('https:');
      const req = (secure ? httpsRequest : httpRequest)(
        url,
        {
          method: 'POST',
          agent: secure ? httpsAgent : httpAgent,
          headers: { 'content-type': 'application/json', ...headers },
        },
        (res) => {
          if (res.statusCode === 200) return res.resume().on('end', resolve);
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk;
          });
          res.on('end', () => reject(new Error(`${url} answered ${res.statusCode} ${body}`)));
        },
      );
      req.on('error', (error) => reject(new Error(`${url}: ${error.message}`)));
      req.end(BODY);
    });
  const direct = () => post(`${backend.url}/api/managetask`);
  const through = () =>
    post(`${front.url}/functions/managetask`, { 'Ocp-Gateway-Subscription-Key': front.key as string });
  const latency = async (call: () => Promise<void>) =>
    median(
      await rounds(2000, async () => {
        const began = performance.now();
        await call();
        return performance.now() - began;
      }),
    );
  try {
    // Warm up both paths (connections, JIT) before measuring.
    await throughput(500, 16, direct);
    await throughput(500, 16, through);
    const directMedianMs = await latency(direct);
    const gatewayMedianMs = await latency(through);
    const directPerSec = median(await rounds(3, () => throughput(3000, 16, direct)));
    const gatewayPerSec = median(await rounds(3, () => throughput(3000, 16, through)));
    // Warm-up, latency and throughput rounds add up to over 10,000 gateway requests.
    const rss = await ask<number>(front.process, 'rss');
    return {
      directMedianMs,
      gatewayMedianMs,
      addedMedianMs: gatewayMedianMs - directMedianMs,
      directPerSec,
      gatewayPerSec,
      gatewayRssMb: rss / 1024 / 1024,
    };
  } catch (error) {
    // A failed call says why: the gateway's own account of its last requests.
    const log = await ask<string[]>(front.process, 'log').catch((why: Error) => [why.message]);
    throw new Error(`${(error as Error).message}\ngateway's last log lines:\n${log.join('\n')}`);
  } finally {
    httpAgent.destroy();
    httpsAgent.destroy();
    front.process.send('exit');
    backend.process.kill();
    data.remove();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] !== 'child') {
  console.log(await benchGateway());
}
