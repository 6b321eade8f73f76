/** Blob trigger paths as the storage extension's BlobPathSource reads them. */
import { describe, expect, it } from 'vitest';
import { compilePattern, triggerPath } from './blob-path.ts';

describe('blob trigger paths', () => {
  it('takes a container alone, matching every blob in it', () => {
    expect(triggerPath('samples')).toEqual({ container: 'samples', pattern: '' });
    expect(compilePattern('').match('a/b/c.txt')).toEqual({});
    expect(triggerPath('in/{name}.json')).toEqual({ container: 'in', pattern: '{name}.json' });
    expect(compilePattern('{name}.json').match('a/b.json')).toEqual({ name: 'a/b' });
  });

  it("captures as the runtime's BindingTemplateSource does: greedy, and empty text too", () => {
    expect(compilePattern('{name}.{ext}').match('report.final.pdf')).toEqual({
      name: 'report.final',
      ext: 'pdf',
    });
    expect(compilePattern('in/{year}/{file}').match('in/2026/11/x.csv')).toEqual({
      year: '2026/11',
      file: 'x.csv',
    });
    expect(compilePattern('{name}.json').match('.json')).toEqual({ name: '' });
    expect(compilePattern('{name}.json').match('a.JSON')).toBeUndefined();
  });

  it('refuses what the extension refuses, in its words', () => {
    for (const path of ['/x', 'c/', '/', 'a\\b/x'])
      expect(() => triggerPath(path), path).toThrow(
        `Invalid blob trigger path '${path}'. Paths must be in the format 'container/blob'.`,
      );
    expect(() => triggerPath('{c}/x')).toThrow(
      "Invalid blob trigger path '{c}/x'. Container paths cannot contain {resolve} tokens.",
    );
  });
});
