/** Reading the host's JSON-lines log beside it: whole (readLogFile) and from where the last read stopped (followLogFile). */
import { appendFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { followLogFile, readLogFile } from './logs.ts';

const data = testDataDir();
const path = join(data.dir, 'functions.jsonl');

afterAll(() => data.remove());

it('answers the complete lines so far as a whole read does, as the host appends them', () => {
  const follow = followLogFile(path);
  expect(follow()).toEqual([]);
  const line = (message: string) => `${JSON.stringify({ level: 'information', message })}\n`;
  writeFileSync(path, line('one'));
  expect(follow().map((e) => e.message)).toEqual(['one']);
  // Half a line, cut inside a character of two bytes: not an entry until it is complete.
  const two = Buffer.from(line('twö'));
  const cut = two.indexOf('ö') + 1;
  appendFileSync(path, two.subarray(0, cut));
  expect(follow()).toEqual(readLogFile(path));
  expect(follow().map((e) => e.message)).toEqual(['one']);
  appendFileSync(path, Buffer.concat([two.subarray(cut), Buffer.from(line('three'))]));
  expect(follow().map((e) => e.message)).toEqual(['one', 'twö', 'three']);
  expect(follow()).toEqual(readLogFile(path));
  // A file removed, then written anew (shorter than what was read): read from its start.
  rmSync(path);
  expect(follow()).toEqual([]);
  writeFileSync(path, line('four'));
  expect(follow().map((e) => e.message)).toEqual(['four']);
  writeFileSync(path, line('5'));
  expect(follow().map((e) => e.message)).toEqual(['5']);
});
