/** host.json values overridden by `AzureFunctionsJobHost__…` app settings, and host.json's numbers as text. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { startComponent } from '../stack/test-support.ts';
import { loadHostConfig } from './config.ts';
import { withHostJsonOverrides } from './hostjson-overrides.ts';
import { appPath } from './test/helpers.ts';

const data = testDataDir();
afterAll(() => data.remove());

function hostJson(text: string): string {
  const dir = join(data.dir, `app-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'host.json'), text);
  return dir;
}

const BLOBS = '{"version": "2.0", "extensions": {"blobs": {"poisonBlobThreshold": %}}}';

describe('app settings AzureFunctionsJobHost__<path>', () => {
  const TIMEOUT = '{"version": "2.0", "functionTimeout": "00:01:00"}';

  it('override the host.json value they name, with __ or : between the names, in any case', () => {
    const timeoutOf = (json: string, settings: Record<string, string>) =>
      loadHostConfig(hostJson(json), settings).functionTimeoutMs;
    expect(timeoutOf(TIMEOUT, {})).toBe(60_000);
    expect(timeoutOf(TIMEOUT, { AzureFunctionsJobHost__functionTimeout: '00:02:00' })).toBe(120_000);
    expect(timeoutOf(TIMEOUT, { 'AzureFunctionsJobHost:functionTimeout': '00:03:00' })).toBe(180_000);
    expect(timeoutOf(TIMEOUT, { AZUREFUNCTIONSJOBHOST__FUNCTIONTIMEOUT: '00:04:00' })).toBe(240_000);
    // A value host.json does not have is added.
    expect(timeoutOf('{"version": "2.0"}', { AzureFunctionsJobHost__functionTimeout: '00:05:00' })).toBe(
      300_000,
    );
    // Other settings, and names with an empty part, are not host.json's.
    for (const name of [
      'AzureFunctionsJobHostX__functionTimeout',
      'AzureFunctionsJobHost____functionTimeout',
    ])
      expect(timeoutOf(TIMEOUT, { [name]: '00:09:00' }), name).toBe(60_000);
  });

  it('replace a key host.json writes in another case, not add a second one', () => {
    const json = '{"version": "2.0", "extensions": {"http": {"routePrefix": ""}}}';
    const settings = { AzureFunctionsJobHost__Extensions__HTTP__ROUTEPREFIX: 'v1' };
    expect(loadHostConfig(hostJson(json), settings).routePrefix).toBe('v1');
    expect(withHostJsonOverrides(JSON.parse(json), settings)).toEqual({
      version: '2.0',
      extensions: { http: { routePrefix: 'v1' } },
    });
  });

  it('are refused, when bad, in the words a bad host.json value gets', () => {
    expect(() =>
      loadHostConfig(hostJson(TIMEOUT), { AzureFunctionsJobHost__functionTimeout: '00:00:00' }),
    ).toThrow(
      'host.json: FunctionTimeout must be greater than 00:00:01 and less than 10675199.02:48:05.4775807.',
    );
    const blobs = { AzureFunctionsJobHost__extensions__blobs__poisonBlobThreshold: '0' };
    const fromFile = () => loadHostConfig(hostJson(BLOBS.replace('%', '0')));
    const fromSetting = () => loadHostConfig(hostJson('{"version": "2.0"}'), blobs);
    expect(fromFile).toThrow("PoisonBlobThreshold must not be less than 1. (Parameter 'value')");
    expect(fromSetting).toThrow("PoisonBlobThreshold must not be less than 1. (Parameter 'value')");
    expect(() =>
      loadHostConfig(hostJson('{"version": "2.0"}'), {
        AzureFunctionsJobHost__extensions__eventHubs__clientRetryOptions__maximumRetries: 'many',
      }),
    ).toThrow(
      "host.json: Failed to convert configuration value at 'AzureFunctionsJobHost:extensions:EventHubs:ClientRetryOptions:MaximumRetries' to type 'System.Int32'. many is not a valid value for Int32. (Parameter 'value')",
    );
  });

  it("leave the version check to the file's own 'version', as the runtime checks it before any setting", () => {
    const withVersion = (json: string, version: string) =>
      loadHostConfig(hostJson(json), { AzureFunctionsJobHost__version: version });
    expect(withVersion('{"version": "2.0"}', '3.0').routePrefix).toBe('api');
    expect(() => withVersion('{"functionTimeout": "00:01:00"}', '2.0')).toThrow(
      "The host.json file is missing the required 'version' property.",
    );
  });

  it('set array elements by index (__0, __1), past the end appended in order, and leave a section with children whole', () => {
    const host = {
      version: '2.0',
      watchDirectories: ['a', 'b'],
      logging: { logLevel: { default: 'Warning' } },
    };
    const merged = withHostJsonOverrides(host, {
      AzureFunctionsJobHost__watchDirectories__1: 'B',
      AzureFunctionsJobHost__watchDirectories__9: 'd',
      AzureFunctionsJobHost__watchDirectories__5: 'c',
      AzureFunctionsJobHost__watchFiles__0: 'x.json',
      AzureFunctionsJobHost__logging: 'text',
    });
    expect(merged).toEqual({
      version: '2.0',
      watchDirectories: ['a', 'B', 'c', 'd'],
      watchFiles: ['x.json'],
      logging: { logLevel: { default: 'Warning' } },
    });
    expect(host.watchDirectories).toEqual(['a', 'b']);
  });
});

describe('a function app started with an override', () => {
  it("routes under the routePrefix an app setting gives, over host.json's", async () => {
    const settings = {
      AzureWebJobsSecretStorageType: 'files',
      AzureFunctionsJobHost__extensions__http__routePrefix: 'v1',
    };
    const host = await startComponent(
      'functions',
      { port: 0, appDir: appPath('app-routes'), settings },
      data.dir,
    );
    try {
      const base = host.endpoints.baseUrl as string;
      expect(await (await fetch(`${base}/v1/items`)).text()).toBe('allItems');
      expect((await fetch(`${base}/items`)).status).toBe(404);
    } finally {
      await host.stop();
    }
  });
});
