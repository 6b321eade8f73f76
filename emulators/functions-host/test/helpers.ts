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

/** The host id the running host reports (`GET /admin/host/status`, master key). */
export async function hostIdOf(host: ComponentUnderTest, masterKey: string): Promise<string> {
  const status = await fetch(`${host.endpoints.baseUrl}/admin/host/status`, {
    headers: { 'x-functions-key': masterKey },
  });
  return ((await status.json()) as { id: string }).id;
}

/** Blob storage, then the CommonJS test app with it as AzureWebJobsStorage and StorageConnection. */
export async function startCjsHostOnBlob(
  dataDir: string,
  logFile: string,
): Promise<{ blob: ComponentUnderTest; host: ComponentUnderTest; connectionString: string }> {
  const blob = await startComponent('blob', { port: 0 }, dataDir);
  const connectionString = blob.endpoints.connectionString as string;
  const settings = { AzureWebJobsStorage: connectionString, StorageConnection: connectionString };
  const host = await startComponent(
    'functions',
    { port: 0, appDir: appPath('app-cjs'), logFile, settings },
    dataDir,
  );
  return { blob, host, connectionString };
}
