/**
 * Compose mode: docker-compose.yml brought up with testcontainers (waiting on its health checks), then
 * a stack.json-shaped target file for the contract table and the scenarios.
 *   npm run package && npx tsx system/deploy/compose-target.ts [--target-file F]   (Ctrl-C takes it down)
 * or, for a test run, `TASKSTACK_TARGET=compose` with compose-setup.ts as vitest's global setup.
 * Without a reachable Docker engine it stops at once, with one line, having run nothing.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DockerComposeEnvironment, getContainerRuntimeClient, Wait } from 'testcontainers';
import { type Apps, loadApps, repositoryRoot } from '../../emulators/core/apps.ts';
import { writeFileAtomic } from '../../emulators/core/files.ts';
import { loadSecrets, type StackSecrets } from '../../emulators/core/secrets.ts';
import { loadTopology, type Topology } from '../../emulators/core/topology.ts';
import { DEFAULT_PORTS } from '../../emulators/stack/ports.ts';
import { composeFile } from './compose.ts';
import { composeEnv } from './compose-env.ts';
import { COMPOSE_FILE, outDir } from './paths.ts';

export class ComposeTargetError extends Error {}

/** How long finding the engine may take: a refused or absent socket answers at once; this bounds a stuck one. */
const ENGINE_CHECK_MS = 30_000;

async function requireDocker(): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${ENGINE_CHECK_MS / 1000} s`)),
      ENGINE_CHECK_MS,
    );
  });
  try {
    await Promise.race([getContainerRuntimeClient(), timeout]);
  } catch (error) {
    throw new ComposeTargetError(
      `TASKSTACK_TARGET=compose needs a reachable Docker engine, and there is none (${(error as Error).message}); nothing was run.`,
    );
  } finally {
    clearTimeout(timer);
  }
}

/** The target file for the compose stack: the published addresses on the host, and the keys compose-env.ts gave it. */
export function composeTargetFile(topology: Topology, apps: Apps, secrets: StackSecrets) {
  const services = composeFile(topology, apps).services as Record<string, unknown>;
  const url = (app: string) => `http://127.0.0.1:${apps[app]?.localPort}`;
  const kindOf = (kind: string) => Object.keys(apps).find((app) => apps[app]?.kind === kind);
  const functionsApp = kindOf('functionapp');
  const webApp = kindOf('webapp');
  return {
    target: 'compose',
    baseUrl: functionsApp && url(functionsApp),
    webBaseUrl: webApp && url(webApp),
    gatewayUrl: services.gateway ? `https://127.0.0.1:${DEFAULT_PORTS.gateway}` : undefined,
    // The simulator serves APIM's developer portal under /developer (stack.json's portalUrl).
    portalUrl: services.gateway ? `https://127.0.0.1:${DEFAULT_PORTS.gateway}/developer` : undefined,
    authUrl: `https://127.0.0.1:${DEFAULT_PORTS.identity}`,
    subscriptionKey: services.gateway ? secrets.subscriptionKey : undefined,
    apps: Object.fromEntries(Object.keys(apps).map((app) => [app, { url: url(app) }])),
    secrets: { EncryptionKey: secrets.encryptionKey },
  };
}

export async function composeTarget(options: { targetFile: string; dataDir: string }) {
  await requireDocker();
  const topology = loadTopology();
  const apps = loadApps();
  const unpackaged = Object.keys(apps).filter((app) => !existsSync(join(outDir, app)));
  if (unpackaged.length)
    throw new ComposeTargetError(`${unpackaged.join(', ')} not packaged: run npm run package first`);
  const secrets = await loadSecrets(options.dataDir, topology);
  const services = composeFile(topology, apps).services as Record<string, { healthcheck?: unknown }>;
  let environment = new DockerComposeEnvironment(repositoryRoot, COMPOSE_FILE)
    .withEnvironment(composeEnv(secrets))
    .withBuild();
  for (const [service, definition] of Object.entries(services))
    if (definition.healthcheck)
      environment = environment.withWaitStrategy(`${service}-1`, Wait.forHealthCheck());
  const started = await environment.up();
  const target = composeTargetFile(topology, apps, secrets);
  writeFileAtomic(options.targetFile, `${JSON.stringify(target, null, 2)}\n`);
  return { target, down: () => started.down() };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { 'target-file': { type: 'string' } } });
  const dataDir = join(repositoryRoot, '.taskstack', 'compose');
  const targetFile = values['target-file'] ?? join(dataDir, 'target.json');
  try {
    const { down } = await composeTarget({ targetFile, dataDir });
    console.log(`compose stack up; target file ${targetFile}. Ctrl-C takes it down.`);
    process.once('SIGINT', () => void down().then(() => process.exit(0)));
  } catch (error) {
    console.error(`taskstack compose: ${(error as Error).message}`);
    process.exit(1);
  }
}
