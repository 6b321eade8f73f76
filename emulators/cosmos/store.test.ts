/** The Cosmos DB emulator's log on a disk that fills up: what it took part of is taken back. */
import { readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { fileStore, type LogRecord } from './store.ts';

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
