/**
 * Writes every file derived from the description (system/topology.json + system/apps.json):
 *   npx tsx system/deploy/generate.ts
 * A test compares each committed file with what this would write, so they cannot drift.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { loadApps, repositoryRoot } from '../../emulators/core/apps.ts';
import { loadTopology } from '../../emulators/core/topology.ts';
import { appRegistrationsScript } from './app-registrations.ts';
import { armParameters, armTemplate } from './arm.ts';
import { composeFile, eventHubsConfig } from './compose.ts';
import {
  APP_REGISTRATIONS,
  COMPOSE_FILE,
  ENVIRONMENTS,
  EVENTHUBS_CONFIG,
  parametersFile,
  TEMPLATE,
} from './paths.ts';

const HEADER =
  '# Generated from system/topology.json and system/apps.json by system/deploy/generate.ts: do not edit.\n';
const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** Each generated file (path relative to the repository root) and its content. */
export function generatedFiles(topology = loadTopology(), apps = loadApps()): Record<string, string> {
  return {
    [COMPOSE_FILE]:
      HEADER + stringify(composeFile(topology, apps), { lineWidth: 0, aliasDuplicateObjects: false }),
    [EVENTHUBS_CONFIG]: json(eventHubsConfig(topology)),
    [TEMPLATE]: json(armTemplate(topology, apps)),
    [APP_REGISTRATIONS]: appRegistrationsScript(topology, apps),
    ...Object.fromEntries(
      ENVIRONMENTS.map((environment) => [parametersFile(environment), json(armParameters(environment))]),
    ),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [path, content] of Object.entries(generatedFiles())) {
    const target = join(repositoryRoot, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content, { mode: path.endsWith('.sh') ? 0o755 : 0o644 });
    console.log(`wrote ${path}`);
  }
}
