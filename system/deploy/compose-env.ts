/**
 * Writes the env file docker-compose.yml reads its secrets from (never committed):
 *   npx tsx system/deploy/compose-env.ts [--data-dir .taskstack/compose]
 *   docker compose --env-file .taskstack/compose.env up --wait
 * The keys are the stack's usual keys.json (generated once per data directory, mode 0600).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { repositoryRoot } from '../../emulators/core/apps.ts';
import { writeFileAtomic } from '../../emulators/core/files.ts';
import { loadSecrets, type StackSecrets, sessionSecret } from '../../emulators/core/secrets.ts';
import { loadTopology } from '../../emulators/core/topology.ts';
import { directoryVariable, identityHeaderVariable } from './compose.ts';

/** Every variable docker-compose.yml names, from the stack's keys. */
export function composeEnv(secrets: StackSecrets): Record<string, string> {
  return {
    TASKSTACK_KEYS: Buffer.from(JSON.stringify(secrets)).toString('base64'),
    TASKSTACK_TENANT_ID: secrets.tenantId,
    TASKSTACK_EVENTGRID_KEY: secrets.eventGridKey,
    TASKSTACK_ENCRYPTION_KEY: secrets.encryptionKey,
    TASKSTACK_FUNCTION_KEY: secrets.functionKey,
    TASKSTACK_SESSION_SECRET: sessionSecret(secrets),
    ...Object.fromEntries(
      Object.entries(secrets.directory.applications).flatMap(([name, registration]) => [
        [directoryVariable(name, 'clientId'), registration.clientId],
        [directoryVariable(name, 'clientSecret'), registration.clientSecret],
      ]),
    ),
    ...Object.fromEntries(
      Object.entries(secrets.identities).map(([name, identity]) => [
        identityHeaderVariable(name),
        identity.header,
      ]),
    ),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { 'data-dir': { type: 'string' } } });
  const dataDir = values['data-dir'] ?? join(repositoryRoot, '.taskstack', 'compose');
  const env = composeEnv(await loadSecrets(dataDir, loadTopology(), process.env.TASKSTACK_ENCRYPTION_KEY));
  const path = join(dirname(dataDir), 'compose.env');
  writeFileAtomic(
    path,
    Object.entries(env)
      .map(([name, value]) => `${name}=${value}\n`)
      .join(''),
  );
  console.log(`wrote ${path}`);
}
