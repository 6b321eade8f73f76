import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../core/files.ts';

/**
 * stack.json: the machine-readable description of the running stack, for tools, tests and scenarios.
 * It holds keys, so it is written with mode 0600, and only once every component is healthy.
 */
export interface StackDescription {
  pid: number;
  dataDir: string;
  inMemory: boolean;
  controlUrl: string;
  /** The spec's addresses; `baseUrl`, `webBaseUrl` and `gatewayUrl` appear with their components. */
  authUrl: string;
  baseUrl?: string;
  webBaseUrl?: string;
  gatewayUrl?: string;
  functionKey: string;
  masterKey: string;
  subscriptionKey: string;
  connections: Record<string, string>;
  secrets: Record<string, string>;
  /** Each app's managed identity, as its IDENTITY_ENDPOINT / IDENTITY_HEADER settings. */
  identities: Record<
    string,
    { principalId: string; clientId: string; IDENTITY_ENDPOINT: string; IDENTITY_HEADER: string }
  >;
  endpoints: Record<string, Record<string, string>>;
  logs: Record<string, string>;
}

export const stackFilePath = (dataDir: string) => join(dataDir, 'stack.json');

export function writeStackFile(description: StackDescription): void {
  writeFileAtomic(stackFilePath(description.dataDir), `${JSON.stringify(description, null, 2)}\n`);
}

export function removeStackFile(dataDir: string): void {
  rmSync(stackFilePath(dataDir), { force: true });
}

/** The stack described in `dataDir`, if its launcher is still alive. */
export function runningStack(dataDir: string): StackDescription | undefined {
  try {
    const description = JSON.parse(readFileSync(stackFilePath(dataDir), 'utf8')) as StackDescription;
    process.kill(description.pid, 0);
    return description;
  } catch {
    return undefined;
  }
}
