import { Agent, createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { loadTls } from '../emulators/core/ca.ts';
import { testDataDir } from '../emulators/core/testing.ts';
import { median, rounds, throughput } from './measure.ts';

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
  const agent = new Agent({ ca: tls.ca, keepAlive: true });
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
