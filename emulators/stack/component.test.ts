import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, expect, it } from 'vitest';
import { repositoryRoot } from '../core/apps.ts';
import { testContext, testDataDir } from '../core/testing.ts';
import { ComponentProcess, entryArgs } from './component.ts';
import { Console } from './console.ts';
import { startMessage } from './test-support.ts';

const data = testDataDir();
afterAll(() => data.remove());

// Node may see a component's exit before the end of its IPC channel; the channel then still reads as
// connected, and a message sent on it is never answered. A stack clock moved just after a component was
// stopped failed so, 5 s later, with "not answering" (an outage test, on Node 24). Here a process of the
// component's own holds its channel (fd 3, as the launcher forks it) open after the component dies, so
// that the moment lasts: the component stops as a killed one does, with no goodbye on the channel.
const component = `
const { spawn } = require('node:child_process');
const { writeFileSync } = require('node:fs');
const holder = spawn('sleep', ['30'], { stdio: ['ignore', 'ignore', 'ignore', 3], detached: true });
writeFileSync(process.argv[2], String(holder.pid));
process.on('message', (message) => {
  if (message.type === 'start') process.send({ type: 'ready', endpoints: {} });
  else if (message.type === 'clock' || message.type === 'health')
    process.send({ type: 'reply', id: message.id, ok: true });
  else if (message.type === 'stop') process.kill(process.pid, 'SIGKILL');
});`;

it('takes a component whose process has exited for one not running, while its channel is still open', async () => {
  const context = await testContext(data.dir);
  const script = join(data.dir, 'component.cjs');
  const holderPid = join(data.dir, 'holder.pid');
  writeFileSync(script, component);
  const process_ = new ComponentProcess(
    'keyvault',
    startMessage('keyvault', {}, context),
    process.env,
    join(data.dir, 'keyvault.log'),
    new Console(['keyvault'], new PassThrough()),
    { path: script, args: [holderPid] },
  );
  await process_.launch();
  try {
    await process_.setClock([{ since: 0, offsetMs: 60_000 }]);
    await process_.stop();
    expect(process_.running).toBe(false);
    await expect(process_.request({ type: 'health' }, 1_000)).rejects.toThrow('keyvault is not running');
    // Not sent, so not waited for: the next start takes the clock from its start message.
    await process_.setClock([{ since: 0, offsetMs: 120_000 }]);
  } finally {
    await process_.stop();
    process.kill(Number(readFileSync(holderPid, 'utf8')), 'SIGKILL');
  }
});

it("names a host's code cache by its app's folder in the project, and shares one among apps elsewhere", () => {
  const entry = { path: 'run-cached.cjs', args: ['functions.cjs'] };
  const cache = (appDir: string) => entryArgs(entry, { appDir })[0];
  const system = cache(join(repositoryRoot, 'system', 'functions'));
  expect(system).toMatch(/^--cache=app-[0-9a-f]{16}$/);
  expect(cache(join(repositoryRoot, 'system', 'web'))).not.toBe(system);
  // Tests' copies in temporary folders: one cache between them, not one left behind per folder.
  expect(cache(join(data.dir, 'one'))).toBe('--cache=app-elsewhere');
  expect(cache(join(data.dir, 'two'))).toBe('--cache=app-elsewhere');
  expect(entryArgs(entry, {})).toEqual(['functions.cjs']);
});
