/** The Cosmos DB emulator's log on a disk that fills up: what it took part of is taken back. */
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { CosmosClient } from '@azure/cosmos';
import { afterAll, expect, it } from 'vitest';
import { testContext, testDataDir, waitFor } from '../core/testing.ts';
import { startComponent } from '../stack/test-support.ts';
import { fileStore, type LogRecord } from './store.ts';
import { NO_IDENTITY } from './testing.ts';

const data = testDataDir();
afterAll(() => data.remove());

const record = (key: string): LogRecord => ({ t: 'del', db: 'TestDB', coll: 'Tasks', key, lsn: 1 });

it('cuts off a record the disk took only part of, says so once, and writes nothing more, nor a snapshot', () => {
  const dir = join(data.dir, 'full-disk');
  let full = false;
  const failures: string[] = [];
  const store = fileStore(dir, {
    dump: () => ({ databases: [] }),
    log: () => {},
    failed: (error) => failures.push(error.message),
    // A filling disk: ten bytes of the record, then no more room.
    write: (fd, buffer, offset, length) => {
      if (!full) return writeSync(fd, buffer, offset, length);
      if (offset === 0) return writeSync(fd, buffer, 0, 10);
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    },
  });
  store.load();
  store.append([record('kept')]);
  const before = readFileSync(join(dir, 'log.jsonl'), 'utf8');
  full = true;
  expect(() => store.append([record('refused')])).toThrow('ENOSPC');
  expect(failures).toEqual(['ENOSPC: no space left on device, write']);
  // The torn part is gone: a later record (after the component's restart) starts on a line of its own.
  expect(readFileSync(join(dir, 'log.jsonl'), 'utf8')).toBe(before);
  full = false;
  expect(() => store.append([record('after')])).toThrow(
    'cosmos store: the log could not be written (ENOSPC: no space left on device, write)',
  );
  store.close();
  expect(readFileSync(join(dir, 'log.jsonl'), 'utf8')).toBe(before);
  expect(() => readFileSync(join(dir, 'snapshot.json'))).toThrow('ENOENT');
  expect(failures).toHaveLength(1);
});

it('answers the write its log refused with 500, then starts again from its files, without it', async () => {
  const dir = data.dir;
  const cosmos = await startComponent('cosmos', { port: 0, ...NO_IDENTITY }, dir);
  const { secrets } = await testContext(dir);
  try {
    // The endpoint's port is new after a restart.
    const client = () =>
      new CosmosClient({ endpoint: cosmos.endpoints.cosmos, key: secrets.cosmosKey })
        .database('TasksDB')
        .container('Tasks');
    await client().items.create({ id: 'kept' });
    // A full disk, for this process only: its files may grow by 10 bytes more (writes past it fail EFBIG).
    const logSize = statSync(join(dir, 'state', 'cosmos', 'log.jsonl')).size;
    const pid = cosmos.pid as number;
    execFileSync('prlimit', [`--fsize=${logSize + 10}`, '--pid', String(pid)]);
    await expect(client().items.create({ id: 'refused' })).rejects.toMatchObject({ code: 500 });
    await waitFor('the restart', () => cosmos.output.includes('restarted') && cosmos.pid !== pid);
    expect(cosmos.output).toContainEqual(
      expect.stringMatching(
        /^crashed: the log could not be written \(EFBIG: file too large, write\): starting again from its files/,
      ),
    );
    const container = client();
    expect((await container.item('kept', 'kept').read()).statusCode).toBe(200);
    expect((await container.item('refused', 'refused').read()).statusCode).toBe(404);
    expect((await container.items.create({ id: 'after' })).statusCode).toBe(201);
  } finally {
    await cosmos.stop();
  }
});
