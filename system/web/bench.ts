/**
 * Web app A in the stack (its App Service component): /api/tasks requests per second against a bare
 * Express app serving the same JSON in its own process, the latency of a form Create until
 * ProcessTaskEvents logs the task (web app → Event Hubs → functions host), and each web component's RSS.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { httpClient, median, rounds, throughput } from '../../bench/measure.ts';
import { testDataDir } from '../../emulators/core/testing.ts';
import { start } from '../../emulators/stack/launcher.ts';

const TASK = JSON.stringify({ title: 'bench', description: 'some description', dueDate: '2030-01-01' });
const call = httpClient(16, { 'content-type': 'application/json' });

/** The baseline: Express with a JSON body parser and an in-memory list, nothing else. */
async function bareExpress(): Promise<void> {
  const { default: express } = await import('express');
  const app = express();
  const tasks: unknown[] = [];
  app.use(express.json());
  app.get('/api/tasks', (_req, res) => {
    res.json(tasks);
  });
  app.post('/api/tasks', (req, res) => {
    const task = { id: crypto.randomUUID(), ...req.body };
    tasks.push(task);
    res.json(task);
  });
  const server = app.listen(0, '127.0.0.1', () => {
    process.send?.(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
  });
}

function startBareExpress(): Promise<{ child: ChildProcess; url: string }> {
  const child = fork(fileURLToPath(import.meta.url), ['bare-express'], { execArgv: ['--import', 'tsx'] });
  return new Promise((resolve, reject) => {
    child.once('message', (url) => resolve({ child, url: String(url) }));
    child.once('exit', (code) => reject(new Error(`bare Express exited (${code})`)));
  });
}

/** Resident memory of a process, in MB. */
function rssMb(pid: number | undefined): number {
  const status = pid ? readFileSync(`/proc/${pid}/status`, 'utf8') : '';
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** New text appended to a file since the last call (the functions host's JSON-lines log). */
function tail(path: string) {
  let offset = statSync(path).size;
  return () => {
    const size = statSync(path).size;
    if (size <= offset) return '';
    const buffer = Buffer.alloc(size - offset);
    const fd = openSync(path, 'r');
    readSync(fd, buffer, 0, buffer.length, offset);
    closeSync(fd);
    offset = size;
    return buffer.toString('utf8');
  };
}

export async function benchWebApp() {
  const data = testDataDir();
  // The stack and the baseline start side by side: both are set-up, nothing is measured before both
  // are up (6.0–7.2 s side by side against 7.6–10.7 s one after the other, four alternating pairs).
  const [started, bareStarted] = await Promise.allSettled([
    start({
      dataDir: data.dir,
      ports: 'free',
      console: false,
      inMemory: true,
      components: [
        'identity',
        'blob',
        'cosmos',
        'keyvault',
        'eventhubs',
        'eventgrid',
        'functions',
        'web',
        'web-b',
      ],
    }),
    startBareExpress(),
  ]);
  if (started.status === 'rejected' || bareStarted.status === 'rejected') {
    if (bareStarted.status === 'fulfilled') bareStarted.value.child.kill();
    if (started.status === 'fulfilled') await started.value.stop();
    data.remove();
    throw started.status === 'rejected' ? started.reason : (bareStarted as PromiseRejectedResult).reason;
  }
  const stack = started.value;
  const bare = bareStarted.value;
  try {
    const web = stack.description.webBaseUrl as string;
    // A list of 20 tasks on both, then GET and POST under 16 concurrent clients.
    for (let i = 0; i < 20; i++) {
      await call(`${web}/api/tasks`, 'POST', TASK);
      await call(`${bare.url}/api/tasks`, 'POST', TASK);
    }
    const perSec = async (url: string, method: string) => {
      await throughput(300, 16, () => call(url, method, method === 'POST' ? TASK : undefined));
      return median(
        await rounds(3, () =>
          throughput(1500, 16, () => call(url, method, method === 'POST' ? TASK : undefined)),
        ),
      );
    };
    const bareGet = await perSec(`${bare.url}/api/tasks`, 'GET');
    const webGet = await perSec(`${web}/api/tasks`, 'GET');

    // Form Creates, one at a time: the page's form token and cookies, then the log line for that task.
    const page = await call(`${web}/`);
    const cookie = ([page.headers['set-cookie'] ?? []].flat() as string[])
      .map((c) => c.split(';')[0])
      .join('; ');
    const token = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const log = tail(stack.description.logs.functions as string);
    const latencies = await rounds(25, async () => {
      const title = `latency ${crypto.randomUUID()}`;
      const began = performance.now();
      const created = await call(
        `${web}/tasks`,
        'POST',
        new URLSearchParams({ _csrf: token, title, description: '', dueDate: '' }).toString(),
        { 'content-type': 'application/x-www-form-urlencoded', cookie },
      );
      if (created.status !== 303) throw new Error(`Create answered ${created.status}`);
      let seen = '';
      while (!seen.includes(title)) {
        seen += log();
        if (performance.now() - began > 30_000) throw new Error('ProcessTaskEvents did not log the task');
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      return performance.now() - began;
    });
    const bodies = (await call(`${web}/api/tasks`)).body.length;
    return {
      bareGetPerSec: bareGet,
      webGetPerSec: webGet,
      barePostPerSec: await perSec(`${bare.url}/api/tasks`, 'POST'),
      webPostPerSec: await perSec(`${web}/api/tasks`, 'POST'),
      createToLogMs: median(latencies),
      // After the 1,000s of requests above (B after its health checks only: it serves signed-in users).
      webRssMb: rssMb(stack.pids().web),
      webBRssMb: rssMb(stack.pids()['web-b']),
      listBytes: bodies,
    };
  } finally {
    bare.child.kill();
    await stack.stop();
    data.remove();
  }
}

if (process.argv[2] === 'bare-express') await bareExpress();
else if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await benchWebApp());
