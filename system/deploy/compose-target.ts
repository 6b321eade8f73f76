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
import { repositoryRoot, writeFileAtomic } from '../../emulators/core/files.ts';
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

export async function composeTarget(options: { targetFile: string; dataDir: string }) {
  await requireDocker();
  // The description is loaded once an engine has answered: without one, the script stops having
  // loaded testcontainers alone (under tsx ~0.8 s of CPU less; compose-target.test.ts runs it twice).
  const [
    { loadApps },
    { loadSecrets },
    { loadTopology },
    { composeFile, composeTargetFile },
    { composeEnv },
  ] = await Promise.all([
    import('../../emulators/core/apps.ts'),
    import('../../emulators/core/secrets.ts'),
    import('../../emulators/core/topology.ts'),
    import('./compose.ts'),
    import('./compose-env.ts'),
  ]);
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
