/**
 * The Event Hubs trigger's host.json `initialOffsetOptions`: a partition without a checkpoint starts where
 * it says (here FromEnd), not at its first event.
 */
import { cpSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { repositoryRoot } from '../core/apps.ts';
import { testDataDir, waitFor } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import {
  appPath,
  eventHubsStoresFor,
  eventsLogged,
  readLog,
  startEsmHostOnEventHubs,
} from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let host: ComponentUnderTest | undefined;
const stores = eventHubsStoresFor(data, () => host);

it('starts a partition without a checkpoint at its end with FromEnd: an event sent before is not run', async () => {
  await stores().producer.sendBatch([{ body: 'before' }], { partitionId: '0' });
  // The test app, with FromEnd, beside the project's packages.
  const appDir = join(data.dir, 'app-from-end');
  cpSync(appPath('app-esm'), appDir, { recursive: true });
  symlinkSync(join(repositoryRoot, 'node_modules'), join(appDir, 'node_modules'));
  writeFileSync(
    join(appDir, 'host.json'),
    JSON.stringify({
      version: '2.0',
      extensions: { http: { routePrefix: '' }, eventHubs: { initialOffsetOptions: { type: 'FromEnd' } } },
    }),
  );
  host = await startEsmHostOnEventHubs(stores(), data.dir, logFile, 'oneAtATime', appDir);
  // Events sent before the partition's receiver opens are behind its end too: one every 0.2 s until one
  // runs (the receiver opens within a second of the start).
  let sent = 0;
  await waitFor(
    'an event sent after the receiver opened',
    () => readLog(logFile).some((e) => e.message.startsWith('message "after-')),
    30_000,
    () => stores().producer.sendBatch([{ body: `after-${++sent}` }], { partitionId: '0' }),
    200,
  );
  // From the start, the partition's first event would have run first.
  expect(eventsLogged(logFile, 'before')).toEqual([]);
});
