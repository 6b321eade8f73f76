/** The host's JSON-lines log when it cannot be written: said once, and the functions' lines go on on the console. */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../core/testing.ts';
import { type ComponentUnderTest, startComponent } from '../stack/test-support.ts';
import { appPath } from './test/helpers.ts';

const data = testDataDir();
// A directory where the log file should be: opening it fails with EISDIR.
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let host: ComponentUnderTest;

beforeAll(async () => {
  mkdirSync(logFile, { recursive: true });
  host = await startComponent('functions', { port: 0, appDir: appPath('app-esm'), logFile }, data.dir);
});

afterAll(async () => {
  await host?.stop();
  data.remove();
});

it('says once that its log file cannot be written, and logs invocations to the console', async () => {
  await waitFor('the startup run on the console', () =>
    host.output.some((line) => line.endsWith('startup ran isPastDue=false')),
  );
  for (let i = 0; i < 2; i++)
    expect(await (await fetch(`${host.endpoints.baseUrl}/ping`)).text()).toBe('pong');
  await waitFor(
    'both pings on the console',
    () => host.output.filter((line) => line.startsWith("Executed 'Functions.ping' (Succeeded")).length === 2,
  );
  const said = `${logFile} cannot be written (EISDIR: illegal operation on a directory, open '${logFile}'): invocations are logged to the console only`;
  expect(host.output.filter((line) => line.includes('cannot be written'))).toEqual([said]);
  expect(host.output.filter((line) => /crash|restart/.test(line))).toEqual([]);
});
