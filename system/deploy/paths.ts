/** Where the files derived from the description live (relative to the repository root unless said). */
import { join } from 'node:path';
import { repositoryRoot } from '../../emulators/core/files.ts';

export const COMPOSE_FILE = 'docker-compose.yml';
/** The Event Hubs emulator's configuration, generated from the topology. */
export const EVENTHUBS_CONFIG = 'system/deploy/compose/eventhubs-config.json';
export const TEMPLATE = 'system/deploy/azure/template.json';
export const parametersFile = (environment: string) => `system/deploy/azure/parameters.${environment}.json`;
export const ENVIRONMENTS = ['dev', 'prod'];
/** The `az ad app` script for the app registrations (executable). */
export const APP_REGISTRATIONS = 'system/deploy/azure/app-registrations.sh';
/** `npm run package` output (absolute): <app>.zip, and <app>/ staged unzipped. */
export const outDir = join(repositoryRoot, 'system', 'deploy', 'out');
/** Where `npm run package` stages an app, as docker-compose mounts it. */
export const stagedApp = (app: string) => `system/deploy/out/${app}`;
