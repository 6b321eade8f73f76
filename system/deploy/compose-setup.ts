/**
 * vitest global setup for `TASKSTACK_TARGET=compose npm test`: brings docker-compose.yml up (see
 * compose-target.ts), hands the tests its target file in TASKSTACK_TARGET_FILE, takes it down after.
 * Without a Docker engine the run stops here, with one line, before any test could pass.
 */
import { join } from 'node:path';
import { repositoryRoot } from '../../emulators/core/files.ts';
import { composeTarget } from './compose-target.ts';

export default async function setup(): Promise<() => Promise<void>> {
  const dataDir = join(repositoryRoot, '.taskstack', 'compose');
  const targetFile = join(dataDir, 'target.json');
  try {
    const { down } = await composeTarget({ targetFile, dataDir });
    process.env.TASKSTACK_TARGET_FILE = targetFile;
    return async () => {
      await down();
    };
  } catch (error) {
    console.error(`taskstack compose: ${(error as Error).message}`);
    process.exit(1);
  }
}
