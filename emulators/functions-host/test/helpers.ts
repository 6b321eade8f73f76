/** Helpers shared by the functions host's tests. */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type ComponentUnderTest, startComponent } from '../../core/testing.ts';
import type { LogEntry } from '../logs.ts';

export const appPath = (name: string) => fileURLToPath(new URL(`./${name}/`, import.meta.url));

export function readLog(path: string): LogEntry[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LogEntry);
}

/**
 * The CommonJS test app in a host of its own, keys in files (these suites run without storage; the
 * blob suite covers `azure-webjobs-secrets`), with two settings that show their precedence.
 */
export function startCjsHost(dataDir: string, logFile: string): Promise<ComponentUnderTest> {
  return startComponent(
    'functions',
    {
      port: 0,
      appDir: appPath('app-cjs'),
      logFile,
      settings: {
        AzureWebJobsSecretStorageType: 'files',
        FROM_SETTINGS: 'settings',
        OVERRIDDEN: 'from settings',
      },
    },
    dataDir,
  );
}
