import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle, stopBuilding } from '../core/bundle.mjs';
import { openSslTrust } from '../core/ca.ts';
import { readJsonIfExists } from '../core/files.ts';
import { heapFlags } from '../core/heap.ts';
import { PortInUseError } from '../core/http.ts';

export const ACCOUNT = 'devstoreaccount1';
const runner = fileURLToPath(new URL('./azurite-runner.cjs', import.meta.url));
const runCached = fileURLToPath(new URL('../core/run-cached.cjs', import.meta.url));
const absent = (name: string) => fileURLToPath(new URL(`./absent/${name}.cjs`, import.meta.url));
/**
 * Azurite (with the runner) in one file, run from V8's code cache (run-cached.cjs): loading its ~1,500
 * modules one by one took most of the blob component's start, compiling the bundle most of the rest.
 * Three packages it loads but never uses here are left out (absent/): Sequelize, as Azurite keeps its
 * metadata in LokiJS; Application Insights, as its telemetry is off; tough-cookie, the cookie jar of an
 * HTTP client Azurite never makes. Loading them cost ~220 ms of CPU and ~30 MB.
 */
const bundledRunner = (onBuild: () => void) =>
  bundle(runner, {
    packages: 'bundle',
    alias: Object.fromEntries(
      ['sequelize', 'applicationinsights', 'tough-cookie'].map((name) => [name, absent(name)]),
    ),
    onBuild,
  });

/** What the blob component says when Azurite must be bundled first (~2 s; at most once a change). */
export const BUILDING_AZURITE =
  'bundling Azurite (the first start since its packages changed takes a few seconds more)…';

/** The connection string apps are given for the account (the form Azure's portal shows, plus BlobEndpoint). */
export function blobConnectionString(blobEndpoint: string, accountKey: string): string {
  return `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${accountKey};BlobEndpoint=${blobEndpoint};`;
}

/**
 * Where the account's blob events stream (blob-events.cjs) is served: a path of the blob endpoint that
 * no container can have.
 */
export const blobEventsUrl = (blobEndpoint: string) => `${blobEndpoint}/$events`;

export interface AzuriteOptions {
  port: number;
  /** Folder for Azurite's data; undefined keeps everything in memory. */
  location: string | undefined;
  accountKey: string;
  onLine(line: string): void;
}

/**
 * Starts Azurite's blob service as a child process. The account key is ours (AZURITE_ACCOUNTS) rather
 * than Azurite's published well-known key. Resolves once Azurite is forked, with its port once it listens (`listening`): the caller can load
 * what it needs meanwhile without holding the fork.
 */
export async function startAzurite(
  options: AzuriteOptions,
): Promise<{ child: ChildProcess; listening: Promise<number> }> {
  const args = [
    '--blobHost',
    '127.0.0.1',
    '--blobPort',
    String(options.port),
    // Current SDKs send a newer x-ms-version than Azurite knows.
    '--skipApiVersionCheck',
    '--loose',
    '--disableTelemetry',
    '--silent',
    ...(options.location ? ['--location', options.location] : ['--inMemoryPersistence']),
  ];
  const main = await bundledRunner(() => options.onLine(BUILDING_AZURITE));
  // A build of the runner (after a source or package change) leaves esbuild's service running here.
  await stopBuilding();
  const trust = openSslTrust(process.env);
  const child = fork(runCached, [main, ...args], {
    env: { ...trust.env, AZURITE_ACCOUNTS: `${ACCOUNT}:${options.accountKey}` },
    execArgv: [...heapFlags('azurite'), ...trust.execArgv],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const listening = new Promise<number>((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        options.onLine(line);
        output += `${line}\n`;
        const listens = /successfully listens on http:\/\/[^:]+:(\d+)/.exec(line);
        if (listens) resolve(Number(listens[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) =>
      reject(
        /EADDRINUSE/.test(output)
          ? new PortInUseError(options.port)
          : (damagedDatabase(options.location) ?? new Error(`Azurite exited (${code}): ${output.trim()}`)),
      ),
    );
  });
  return { child, listening };
}

/** Azurite's metadata files (LokiJS databases, JSON) in its `--location`. */
const DATABASES = ['__azurite_db_blob__.json', '__azurite_db_blob_extent__.json'];

/**
 * Why Azurite could not start on `location`, if one of its databases is damaged: it says only
 * `Exit due to unhandled error: Unexpected token …`, naming no file. Read after a failed start only.
 */
function damagedDatabase(location: string | undefined): Error | undefined {
  for (const name of location ? DATABASES : []) {
    try {
      readJsonIfExists(join(location as string, name));
    } catch (error) {
      return new Error(`${(error as Error).message}; Azurite cannot start on it`);
    }
  }
  return undefined;
}

/**
 * Stops Azurite and waits for it to be gone. Azurite saves its metadata and reports "successfully
 * closed" at once, but its process then lingers until clients' keep-alive sockets time out: once the
 * data is safe, end it instead of waiting.
 */
export function stopAzurite(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('successfully closed')) child.kill('SIGKILL');
    });
    child.kill('SIGTERM');
  });
}
