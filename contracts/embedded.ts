/** The embedded stack as a target: what the contract, Pact and scenario tests run against by default. */
import { type Stack, start } from '../emulators/stack/launcher.ts';
import { stackFilePath } from '../emulators/stack/stackfile.ts';
import { readTarget, type Target } from './target.ts';

/** Starts every component on free ports in `dataDir` and reads its stack.json as a target. */
export async function startEmbeddedTarget(dataDir: string): Promise<{ stack: Stack; target: Target }> {
  const stack = await start({ dataDir, ports: 'free', console: false });
  return { stack, target: readTarget(stackFilePath(dataDir)) };
}
