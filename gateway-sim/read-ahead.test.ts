/**
 * The gateway reads its artifacts as soon as it has its options (Emulator.load), while the functions
 * host it waits for starts; its start uses that read unless the named values (the host's key) or a file
 * changed since.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../emulators/core/emulator.ts';
import { testContext, testDataDir, waitFor } from '../emulators/core/testing.ts';
import gateway from './index.ts';
import type { readAhead } from './read-ahead.ts';
import { copyArtifacts, editArtifact, startBackend } from './testing.ts';

type Ahead = ReturnType<typeof readAhead>;

const data = testDataDir();
let functions: Awaited<ReturnType<typeof startBackend>>;
beforeAll(async () => {
  functions = await startBackend();
});
afterAll(async () => {
  await functions.close();
  data.remove();
});

const optionsWith = (dir: string, functionKey: string) =>
  gateway.options.parse({
    port: 0,
    artifactsDir: dir,
    namedValues: {
      FunctionAppBaseUrl: functions.url,
      WebAppBaseUrl: 'http://127.0.0.1:1',
      FunctionKey: functionKey,
      AuthUrl: 'https://127.0.0.1:1',
      TenantId: 'tenant',
      EntraClientId: 'client',
      EntraClientSecret: 'secret',
    },
  });

/** The function key the gateway sends with POST /functions/managetask (ManageTask.xml's policy). */
async function sentFunctionKey(running: RunningEmulator, subscriptionKey: string) {
  const response = await fetch(`${running.endpoints.gatewayUrl}/functions/managetask`, {
    method: 'POST',
    headers: { 'Ocp-Gateway-Subscription-Key': subscriptionKey, 'content-type': 'application/json' },
    body: '{}',
  });
  await response.body?.cancel();
  return functions.seen.at(-1)?.headers['x-functions-key'];
}

/**
 * The gateway loaded with `loadKey` as the host's key, then started with `startKey`: whether its start
 * had the artifacts read ahead for it, and the key it sends the host.
 */
async function loadThenStart(folder: string, loadKey: string, startKey: string) {
  const context = await testContext(data.dir, { inMemory: true });
  const dir = copyArtifacts(`${data.dir}/${folder}`);
  const ahead = (await gateway.load?.(optionsWith(dir, loadKey))) as Ahead | undefined;
  const readFirst = ahead?.configFor(optionsWith(dir, startKey)) !== undefined;
  const running = await gateway.start(optionsWith(dir, startKey), context, ahead as Ahead);
  try {
    return { readFirst, sent: await sentFunctionKey(running, context.secrets.subscriptionKey) };
  } finally {
    await running.stop();
  }
}

it('reads its artifacts before its start, which uses them', async () => {
  expect(await loadThenStart('same', 'key-at-load', 'key-at-load')).toEqual({
    readFirst: true,
    sent: 'key-at-load',
  });
});

it("reads them again at its start for the host's key of then", async () => {
  expect(await loadThenStart('renewed', 'key-at-load', 'renewed-key')).toEqual({
    readFirst: false,
    sent: 'renewed-key',
  });
});

it('reads them again at its start after a file changed, and refuses what is wrong then', async () => {
  const context = await testContext(data.dir, { inMemory: true });
  const dir = copyArtifacts(`${data.dir}/changed`);
  const options = optionsWith(dir, 'key-at-load');
  const ahead = (await gateway.load?.(options)) as Ahead;
  editArtifact(dir, 'policies/global.xml', (text) => text.replace('<policies>', '<policies><oops>'));
  await waitFor('the change seen', () => ahead.configFor(options) === undefined, 10_000);
  await expect(gateway.start(options, context, ahead)).rejects.toThrow(/global\.xml/);
});

/** The file watchers open in this process (fs.watch's handles). */
const fileWatchers = () => process.getActiveResourcesInfo().filter((name) => name === 'FSEventWrap').length;

it('closes the watchers its load made when its start then fails', async () => {
  const context = await testContext(join(data.dir, 'damaged'));
  mkdirSync(context.stateDir as string, { recursive: true });
  writeFileSync(join(context.stateDir as string, 'subscription-states.json'), '{');
  const options = optionsWith(copyArtifacts(join(data.dir, 'damaged', 'artifacts')), 'key-at-load');
  const before = fileWatchers();
  const ahead = (await gateway.load?.(options)) as Ahead;
  expect(fileWatchers()).toBeGreaterThan(before);
  await expect(gateway.start(options, context, ahead)).rejects.toThrow(/subscription-states\.json/);
  // A closed watcher's handle goes at the event loop's next turn.
  await waitFor('the watchers closed', () => fileWatchers() === before, 5_000);
});
