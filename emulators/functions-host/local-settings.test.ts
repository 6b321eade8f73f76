/**
 * local.settings.json read as Core Tools reads it (AppSettingsFile, 4.2.1 and later): `IsEncrypted`,
 * `Values` and `Host` by these names exactly (JObject's indexer), `IsEncrypted` true when absent, and a
 * file it cannot read is a warning and no local settings, not a failed start.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { startComponent } from '../stack/test-support.ts';
import { loadHostConfig, resolveAppSettings } from './config.ts';
import { appWithHostJson, readLog } from './test/helpers.ts';

const data = testDataDir();
afterAll(() => data.remove());
let apps = 0;

/** The app settings of an app whose local.settings.json is `text`, and the warnings its reading gave. */
function read(text: string) {
  const dir = join(data.dir, `app${apps++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'local.settings.json'), text);
  const warnings: string[] = [];
  const settings = resolveAppSettings(dir, {}, {}, (message) => warnings.push(message));
  return { settings, warnings, path: join(dir, 'local.settings.json') };
}

describe('local.settings.json, as Core Tools reads it', () => {
  it('reads plain Values when IsEncrypted is false, booleans as .NET prints them and null as no value', () => {
    const { settings, warnings } = read(
      JSON.stringify({ IsEncrypted: false, Values: { A: 'a', N: 7, T: true, F: false, E: '', Z: null } }),
    );
    expect(settings).toEqual({ A: 'a', N: '7', T: 'True', F: 'False', E: '' });
    expect(warnings).toEqual([]);
  });

  it('takes a file without IsEncrypted as encrypted, and refuses its values in Core Tools’ words', () => {
    const decrypt =
      "Failed to decrypt settings. Encrypted settings only be edited through 'func settings add'.";
    expect(() => read(JSON.stringify({ Values: { A: 'a' } }))).toThrow(new Error(decrypt));
    expect(() => read(JSON.stringify({ IsEncrypted: null, Values: { A: 'a' } }))).toThrow(new Error(decrypt));
    expect(() => read(JSON.stringify({ IsEncrypted: true, Values: { A: 'a' } }))).toThrow(new Error(decrypt));
    // Empty values decrypt to empty ones.
    expect(read(JSON.stringify({ Values: { A: '' } })).settings).toEqual({ A: '' });
  });

  it('reads the top-level names in their own case only, as JObject’s indexer does', () => {
    const { settings, warnings } = read(JSON.stringify({ isEncrypted: false, values: { A: 'a' } }));
    expect(settings).toEqual({});
    expect(warnings).toEqual([]);
  });

  it('takes comments and trailing commas, as JObject.Parse does', () => {
    const { settings, warnings } = read(
      '{\n  // local only\n  "IsEncrypted": false,\n  "Values": { "A": "a", },\n}',
    );
    expect(settings).toEqual({ A: 'a' });
    expect(warnings).toEqual([]);
  });

  it('warns about a file that does not parse and goes on without local settings', () => {
    const { settings, warnings, path } = read('{ "IsEncrypted": false, "Values": ');
    expect(settings).toEqual({});
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      new RegExp(`^Failed to read app settings file at '${path}'\\. Ensure it is a valid JSON file\\. \\S`),
    );
    expect(warnings[0]).not.toContain('\n');
  });

  it('reads the Values beside a wrong Host.MaxRequestBodySize (this host’s own, which Core Tools ignores), and refuses that at start', () => {
    const text = JSON.stringify({ IsEncrypted: false, Values: { A: 'a' }, Host: { MaxRequestBodySize: 0 } });
    const { settings, warnings } = read(text);
    expect({ settings, warnings }).toEqual({ settings: { A: 'a' }, warnings: [] });
    const dir = join(data.dir, 'wrong-limit');
    mkdirSync(dir);
    writeFileSync(join(dir, 'host.json'), '{ "version": "2.0" }');
    writeFileSync(join(dir, 'local.settings.json'), text);
    expect(() => loadHostConfig(dir)).toThrow(
      new Error(
        'local.settings.json: Host.MaxRequestBodySize must be a whole number of bytes above 0, not 0',
      ),
    );
  });

  it('warns the same about values it cannot convert (an object where a string goes, an array as the file)', () => {
    for (const text of [
      JSON.stringify({ IsEncrypted: false, Values: { A: { nested: 1 } } }),
      JSON.stringify({ IsEncrypted: false, Values: ['A'] }),
      JSON.stringify({ IsEncrypted: false, Values: { A: 'a' }, Host: 5 }),
      '[]',
    ]) {
      const { settings, warnings, path } = read(text);
      expect(settings, text).toEqual({});
      expect(warnings[0], text).toMatch(
        new RegExp(`^Failed to read app settings file at '${path}'\\. Ensure it is a valid JSON file\\. \\S`),
      );
    }
  });
});

describe("a host's start with such a file", () => {
  /** A copy of a test app with `text` as its local.settings.json, started in a host logging to a file. */
  function start(name: string, text: string) {
    const appDir = appWithHostJson('app-timeout', join(data.dir, name), '{ "version": "2.0" }');
    writeFileSync(join(appDir, 'local.settings.json'), text);
    const logFile = join(data.dir, `${name}.jsonl`);
    const settings = { AzureWebJobsSecretStorageType: 'files' };
    return { logFile, host: startComponent('functions', { port: 0, appDir, logFile, settings }, data.dir) };
  }

  it('goes on past a file that does not parse, the warning in its log', async () => {
    const { logFile, host } = start('broken', '{ "Values": ');
    await (await host).stop();
    const warning = readLog(logFile).find((entry) =>
      entry.message.startsWith('Failed to read app settings file'),
    );
    expect(warning?.level).toBe('warning');
  });

  it('stops at plain values in a file without IsEncrypted', async () => {
    await expect(start('unmarked', JSON.stringify({ Values: { A: 'a' } })).host).rejects.toThrow(
      "Failed to decrypt settings. Encrypted settings only be edited through 'func settings add'.",
    );
  });
});
