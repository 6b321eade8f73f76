/** host.json's version and functionTimeout bounds, and the functions the runtime puts in error at start. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { RetryMode } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testContext, testDataDir } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import { startComponent } from '../stack/test-support.ts';
import { loadHostConfig } from './config.ts';
import { sdkRetryOptions } from './eventhub-retry.ts';
import { appPath, appWithHostJson } from './test/helpers.ts';
import { parseTimeSpan } from './timespan.ts';

const data = testDataDir();
let host: ComponentUnderTest;
let base: string;
let masterKey: string;

beforeAll(async () => {
  host = await startComponent(
    'functions',
    {
      port: 0,
      appDir: appPath('app-errors'),
      settings: { AzureWebJobsSecretStorageType: 'files', 'AzureWebJobs.off.Disabled': 'True' },
    },
    data.dir,
  );
  base = host.endpoints.baseUrl as string;
  masterKey = (await testContext(data.dir)).secrets.masterKey;
});

afterAll(async () => {
  await host?.stop();
  data.remove();
});

function hostJson(text: string): string {
  const dir = join(data.dir, `app-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'host.json'), text);
  return dir;
}

describe('host.json', () => {
  it("refuses a host.json without 'version' as the runtime does, and takes an empty one", () => {
    expect(() => loadHostConfig(hostJson('{"functionTimeout": "00:01:00"}'))).toThrow(
      "The host.json file is missing the required 'version' property. See https://aka.ms/functions-hostjson for steps to migrate the configuration file.",
    );
    expect(loadHostConfig(hostJson('{}')).routePrefix).toBe('api');
  });

  it("refuses another 'version' with the runtime's words", () => {
    expect(() => loadHostConfig(hostJson('{"version": "3.0"}'))).toThrow(
      "'3.0' is an invalid value for host.json 'version' property. We recommend you set the 'version' property to '2.0'. This does not correspond to the function runtime version, only to the schema version of the host.json file. See https://aka.ms/functions-hostjson for more information on this configuration file.",
    );
  });

  it('refuses a functionTimeout under one second, as the runtime does on every plan', () => {
    for (const timeout of ['00:00:00', '00:00:00.5']) {
      expect(() => loadHostConfig(hostJson(`{"version": "2.0", "functionTimeout": "${timeout}"}`))).toThrow(
        'FunctionTimeout must be greater than 00:00:01 and less than 10675199.02:48:05.4775807.',
      );
    }
    expect(
      loadHostConfig(hostJson('{"version": "2.0", "functionTimeout": "00:00:01"}')).functionTimeoutMs,
    ).toBe(1000);
  });

  it('bounds functionTimeout by the plan: Consumption (WEBSITE_SKU Dynamic) 5 min by default, at most 10, no -1', () => {
    const timeoutOf = (json: string, sku?: string) =>
      loadHostConfig(hostJson(json), { WEBSITE_SKU: sku }).functionTimeoutMs;
    expect(timeoutOf('{"version": "2.0"}', 'Dynamic')).toBe(5 * 60_000);
    expect(timeoutOf('{"version": "2.0", "functionTimeout": "00:10:00"}', 'dynamic')).toBe(10 * 60_000);
    for (const timeout of ['00:10:01', '-1', '01:00:00'])
      expect(() => timeoutOf(`{"version": "2.0", "functionTimeout": "${timeout}"}`, 'Dynamic')).toThrow(
        'host.json: FunctionTimeout must be greater than 00:00:01 and less than 00:10:00.',
      );
    // Other plans (and none given, as with Core Tools): 30 min by default, -1 for no limit.
    expect(timeoutOf('{"version": "2.0"}', 'Basic')).toBe(30 * 60_000);
    expect(timeoutOf('{"version": "2.0"}')).toBe(30 * 60_000);
    expect(timeoutOf('{"version": "2.0", "functionTimeout": "-1"}', 'ElasticPremium')).toBe(undefined);
    expect(timeoutOf('{"version": "2.0", "functionTimeout": "1.00:00:00"}')).toBe(86_400_000);
  });
});

describe('FUNCTIONS_REQUEST_BODY_SIZE_LIMIT', () => {
  const limitOf = (value: string | undefined) =>
    loadHostConfig(hostJson('{"version": "2.0"}'), { FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: value })
      .requestBodyLimit;

  it("sets the request size limit as the host's HttpRequestBodySizeMiddleware reads it (long.TryParse), 100 MB without it", () => {
    expect(limitOf(undefined)).toBe(104_857_600);
    expect(limitOf('209715200')).toBe(209_715_200);
    expect(limitOf(' +2048 ')).toBe(2048);
    expect(limitOf('0')).toBe(0);
    for (const value of ['', '100MB', '1e6', '1.5', '9223372036854775808'])
      expect(limitOf(value), value).toBe(104_857_600);
  });

  it('refuses a negative one at start, which Kestrel refuses on every request (500 in Azure)', () => {
    expect(() => limitOf('-1')).toThrow(
      'FUNCTIONS_REQUEST_BODY_SIZE_LIMIT is -1: a request size limit cannot be negative (in Azure every request would answer 500)',
    );
  });
});

describe('the plan the host is told (sku)', () => {
  it('is WEBSITE_SKU for the app, and on Consumption a host.json with "functionTimeout": "-1" stops the start', async () => {
    const hostJson = '{ "version": "2.0", "functionTimeout": "-1" }';
    const appDir = appWithHostJson('app-timeout', join(data.dir, 'app-unbounded'), hostJson);
    const options = { port: 0, appDir, settings: { AzureWebJobsSecretStorageType: 'files' } };
    await expect(startComponent('functions', { ...options, sku: 'Dynamic' }, data.dir)).rejects.toThrow(
      'host.json: FunctionTimeout must be greater than 00:00:01 and less than 00:10:00.',
    );
    const premium = await startComponent('functions', { ...options, sku: 'ElasticPremium' }, data.dir);
    await premium.stop();
  });
});

describe('host.json extensions.eventHubs.initialOffsetOptions', () => {
  const offsetOf = (options: string) =>
    loadHostConfig(
      hostJson(`{"version": "2.0", "extensions": {"eventHubs": {"initialOffsetOptions": ${options}}}}`),
    ).eventHubs.initialOffset;

  it('reads the OffsetType in any case, FromStart by default', () => {
    expect(loadHostConfig(hostJson('{"version": "2.0"}')).eventHubs.initialOffset).toEqual({ from: 'start' });
    expect(offsetOf('{"type": "fromEnd"}')).toEqual({ from: 'end' });
    expect(offsetOf('{"type": "FromStart"}')).toEqual({ from: 'start' });
    expect(offsetOf('{"type": "FromEnqueuedTime", "enqueuedTimeUtc": "2026-11-26T10:00:00Z"}')).toEqual({
      from: 'time',
      enqueuedOn: new Date('2026-11-26T10:00:00Z'),
    });
  });

  it("refuses an unknown type or time in the binder's words, and FromEnqueuedTime without a time in the extension's", () => {
    const at =
      "host.json: Failed to convert configuration value at 'AzureFunctionsJobHost:extensions:EventHubs:InitialOffsetOptions:";
    expect(() => offsetOf('{"type": "fromMiddle"}')).toThrow(
      `${at}Type' to type 'Microsoft.Azure.WebJobs.EventHubs.OffsetType'. fromMiddle is not a valid value for OffsetType.`,
    );
    // The binder converts the time whatever the type.
    expect(() => offsetOf('{"type": "fromEnd", "enqueuedTimeUtc": "yesterday"}')).toThrow(
      `${at}EnqueuedTimeUtc' to type 'System.DateTimeOffset'. yesterday is not a valid value for DateTimeOffset.`,
    );
    expect(() => offsetOf('{"type": "fromEnqueuedTime"}')).toThrow(
      "host.json: extensions.eventHubs.initialOffsetOptions: A time must be specified for 'enqueuedTimeUtc', when 'initialOffsetOptions.type' is set to 'fromEnqueuedTime'.",
    );
    // EnumConverter takes an OffsetType's number too; an empty text is none (a Nullable's default).
    expect(offsetOf('{"type": "1"}')).toEqual({ from: 'end' });
    expect(offsetOf('{"type": ""}')).toEqual({ from: 'start' });
  });
});

describe('host.json extensions.eventHubs.clientRetryOptions', () => {
  const retryOf = (options: string) =>
    loadHostConfig(
      hostJson(`{"version": "2.0", "extensions": {"eventHubs": {"clientRetryOptions": ${options}}}}`),
    ).eventHubs.clientRetry;
  const refusal = (options: string) => {
    try {
      retryOf(options);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error(`${options} was taken`);
  };
  const at = (property: string, type: string) =>
    `host.json: Failed to convert configuration value at 'AzureFunctionsJobHost:extensions:EventHubs:ClientRetryOptions:${property}' to type '${type}'.`;
  const setter = 'host.json: extensions.eventHubs.clientRetryOptions.';

  it("reads the extension's EventHubsRetryOptions, with their defaults", () => {
    expect(loadHostConfig(hostJson('{"version": "2.0"}')).eventHubs.clientRetry).toEqual({
      mode: 'exponential',
      maximumRetries: 3,
      delayMs: 800,
      maximumDelayMs: 60_000,
      tryTimeoutMs: 60_000,
    });
    expect(
      retryOf(
        '{"mode": "fixed", "tryTimeout": "00:00:05", "delay": "00:00:00.25", "maximumDelay": "00:00:02", "maximumRetries": 5}',
      ),
    ).toEqual({ mode: 'fixed', maximumRetries: 5, delayMs: 250, maximumDelayMs: 2000, tryTimeoutMs: 5000 });
    // As the configuration binder reads them: names and the mode in any case, numbers as text.
    expect(retryOf('{"Mode": "FIXED", "MAXIMUMRETRIES": " 0 ", "maximumDelay": "0"}')).toEqual({
      mode: 'fixed',
      maximumRetries: 0,
      delayMs: 800,
      maximumDelayMs: 0,
      tryTimeoutMs: 60_000,
    });
  });

  it("refuses a value the binder cannot convert, in the binder's and the converter's words", () => {
    expect(refusal('{"maximumRetries": "three"}')).toBe(
      `${at('MaximumRetries', 'System.Int32')} three is not a valid value for Int32. (Parameter 'value')`,
    );
    expect(refusal('{"maximumRetries": 2.5}')).toBe(
      `${at('MaximumRetries', 'System.Int32')} 2.5 is not a valid value for Int32. (Parameter 'value')`,
    );
    expect(refusal('{"delay": "soon"}')).toBe(
      `${at('Delay', 'System.TimeSpan')} soon is not a valid value for TimeSpan.`,
    );
    expect(refusal('{"tryTimeout": "00:60:00"}')).toBe(
      `${at('TryTimeout', 'System.TimeSpan')} 00:60:00 is not a valid value for TimeSpan.`,
    );
    for (const mode of ['linear', 'constructor', '2'])
      expect(refusal(`{"mode": "${mode}"}`)).toBe(
        `${at('Mode', 'Azure.Messaging.EventHubs.EventHubsRetryMode')} ${mode} is not a valid value for EventHubsRetryMode.`,
      );
  });

  it("refuses a value out of the setters' bounds, in their words", () => {
    const cases: [string, string][] = [
      [
        '{"maximumRetries": -1}',
        "maximumRetries: Value is less than the minimum allowed. (Parameter 'MaximumRetries')",
      ],
      [
        '{"maximumRetries": 101}',
        "maximumRetries: Value is greater than the maximum allowed. (Parameter 'MaximumRetries')",
      ],
      ['{"delay": "00:00:00"}', "delay: Value is less than the minimum allowed. (Parameter 'Delay')"],
      ['{"delay": "00:05:00.001"}', "delay: Value is greater than the maximum allowed. (Parameter 'Delay')"],
      [
        '{"maximumDelay": "-00:00:01.5"}',
        "maximumDelay: Argument MaximumDelay must be a non-negative timespan value. The provided value was -00:00:01.5000000. (Parameter 'MaximumDelay')",
      ],
      [
        '{"tryTimeout": "-1"}',
        "tryTimeout: A timeout value must be positive. To request using the default timeout, please use TimeSpan.Zero or null. (Parameter 'TryTimeout')",
      ],
      [
        '{"tryTimeout": "01:00:01"}',
        "tryTimeout: Value is greater than the maximum allowed. (Parameter 'TryTimeout')",
      ],
    ];
    for (const [options, words] of cases) expect(refusal(options), options).toBe(`${setter}${words}`);
    // The binder sets them in their declaration order (Mode, MaximumRetries, Delay …): the first bad one is named.
    expect(refusal('{"delay": "soon", "maximumRetries": -1}')).toBe(
      `${setter}maximumRetries: Value is less than the minimum allowed. (Parameter 'MaximumRetries')`,
    );
    expect(retryOf('{"delay": "00:05:00", "maximumRetries": 100, "tryTimeout": "01:00:00"}')).toMatchObject({
      delayMs: 300_000,
      maximumRetries: 100,
      tryTimeoutMs: 3_600_000,
    });
  });

  it('stops the host from starting', async () => {
    const appDir = appWithHostJson(
      'app-timeout',
      join(data.dir, 'app-bad-retries'),
      '{"version": "2.0", "extensions": {"eventHubs": {"clientRetryOptions": {"maximumRetries": -1}}}}',
    );
    const options = { port: 0, appDir, settings: { AzureWebJobsSecretStorageType: 'files' } };
    await expect(startComponent('functions', options, data.dir)).rejects.toThrow(
      "host.json: extensions.eventHubs.clientRetryOptions.maximumRetries: Value is less than the minimum allowed. (Parameter 'MaximumRetries')",
    );
  });
});

describe('clientRetryOptions as the JS SDK takes them', () => {
  const options = {
    mode: 'exponential',
    maximumRetries: 3,
    delayMs: 800,
    maximumDelayMs: 60_000,
    tryTimeoutMs: 60_000,
  } as const;

  it("passes them on: retries, delays and a try's timeout in milliseconds, the mode as RetryMode", () => {
    expect(sdkRetryOptions(options)).toEqual({
      maxRetries: 3,
      mode: RetryMode.Exponential,
      retryDelayInMs: 800,
      maxRetryDelayInMs: 60_000,
      timeoutInMs: 60_000,
    });
  });

  it("keeps the .NET policy's outcome where the JS one differs", () => {
    // No retry at all when the maximum delay is zero.
    expect(sdkRetryOptions({ ...options, maximumDelayMs: 0 }).maxRetries).toBe(0);
    // A fixed delay is capped at the maximum too (the JS SDK caps exponential ones only).
    expect(sdkRetryOptions({ ...options, mode: 'fixed', delayMs: 5000, maximumDelayMs: 2000 })).toMatchObject(
      {
        mode: RetryMode.Fixed,
        retryDelayInMs: 2000,
      },
    );
  });

  it('gives each client its own object, as the SDK writes into the one it is given', () => {
    expect(sdkRetryOptions(options)).not.toBe(sdkRetryOptions(options));
  });
});

describe('host.json extensions.blobs', () => {
  const blobsOf = (json: string, sku?: string) =>
    loadHostConfig(hostJson(`{"version": "2.0", "extensions": ${json}}`), { WEBSITE_SKU: sku }).blobs;

  it('reads poisonBlobThreshold (5 by default), not queues.maxDequeueCount, as the extension 5.x does', () => {
    expect(blobsOf('{}').poisonBlobThreshold).toBe(5);
    expect(blobsOf('{"queues": {"maxDequeueCount": 2}}').poisonBlobThreshold).toBe(5);
    expect(blobsOf('{"blobs": {"poisonBlobThreshold": 1}}').poisonBlobThreshold).toBe(1);
  });

  it('reads maxDegreeOfParallelism: 8 per processor by default, 8 on Consumption', () => {
    expect(blobsOf('{}').maxDegreeOfParallelism).toBe(8 * availableParallelism());
    expect(blobsOf('{}', 'Dynamic').maxDegreeOfParallelism).toBe(8);
    expect(blobsOf('{"blobs": {"maxDegreeOfParallelism": 1}}', 'Dynamic').maxDegreeOfParallelism).toBe(1);
  });

  it("refuses a value under 1 with the setters' words", () => {
    expect(() => blobsOf('{"blobs": {"poisonBlobThreshold": 0}}')).toThrow(
      "PoisonBlobThreshold must not be less than 1. (Parameter 'value')",
    );
    expect(() => blobsOf('{"blobs": {"maxDegreeOfParallelism": 0}}')).toThrow(
      "Specified argument was out of the range of valid values. (Parameter 'value')",
    );
  });
});

describe('functions in error', () => {
  it('logs each as the runtime does and leaves it out', async () => {
    const errors = host.output.filter((line) => line.includes('function is in error'));
    expect(errors).toEqual([
      "The 'bad name' function is in error: 'bad name' is not a valid function name.",
      "The 'host' function is in error: 'host' is not a valid function name.",
      "The '1st' function is in error: '1st' is not a valid function name.",
      "The 'adminRoute' function is in error: The specified route conflicts with one or more built in routes.",
      "The 'runtimeRoute' function is in error: The specified route conflicts with one or more built in routes.",
      "The 'second' function is in error: The route specified conflicts with the route defined by function 'first'.",
      "The 'zeta' function is in error: The route specified conflicts with the route defined by function 'alpha'.",
      "The 'badSchedule' function is in error: Microsoft.Azure.WebJobs.Host: Error indexing method 'Functions.badSchedule'. Microsoft.Azure.WebJobs.Extensions: The schedule expression 'every minute' was not recognized as a valid cron expression or timespan string.",
      "The 'unsetSchedule' function is in error: Microsoft.Azure.WebJobs.Host: Error indexing method 'Functions.unsetSchedule'. Microsoft.Azure.WebJobs.Host: '%NoSuchSchedule%' does not resolve to a value.",
    ]);
    // Never a listener that fails to start and is retried: the runtime does not index them at all.
    expect(host.output.filter((line) => line.includes('unable to start'))).toEqual([]);
    for (const path of [
      '/api/bad-name',
      '/api/host-route',
      '/api/first',
      '/api/admin/things',
      '/api/Runtime/x',
    ]) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(404);
    }
    const names = (
      (await (await fetch(`${base}/admin/functions?code=${masterKey}`)).json()) as { name: string }[]
    )
      .map((fn) => fn.name)
      .sort();
    expect(names).toEqual(['alpha', 'first', 'off', 'ok_2-b', 'third']);
  });

  it('runs the others: the first of two conflicting routes, one with no method in common, valid names', async () => {
    const put = await fetch(`${base}/api/same`, { method: 'PUT' });
    expect(put.status).toBe(404);
    expect(await (await fetch(`${base}/api/same`, { method: 'POST' })).text()).toBe('first');
    expect(await (await fetch(`${base}/api/same`, { method: 'DELETE' })).text()).toBe('third');
    expect(await (await fetch(`${base}/api/ok_2-b`)).text()).toBe('ok_2-b');
    expect(await (await fetch(`${base}/api/dup`)).text()).toBe('alpha');
  });

  it('reports a disabled function as disabled in the admin API', async () => {
    const metadata = async (name: string) =>
      (await (await fetch(`${base}/admin/functions/${name}?code=${masterKey}`)).json()) as {
        isDisabled: boolean;
      };
    expect((await metadata('off')).isDisabled).toBe(true);
    expect((await metadata('first')).isDisabled).toBe(false);
    expect((await fetch(`${base}/api/off`)).status).toBe(404);
  });

  it('runs a disabled HTTP function for the master key alone, as the runtime does; any other key gets 404', async () => {
    const { functionKey } = (await testContext(data.dir)).secrets;
    const tries: Record<string, string>[] = [
      {},
      { 'x-functions-key': functionKey },
      { 'x-functions-key': 'wrong' },
    ];
    for (const headers of tries) {
      const response = await fetch(`${base}/api/off`, { headers });
      expect(response.status).toBe(404);
      expect(await response.text()).toBe('');
    }
    expect(await (await fetch(`${base}/api/off?code=${masterKey}`)).text()).toBe('off');
    expect(await (await fetch(`${base}/api/off`, { headers: { 'x-functions-key': masterKey } })).text()).toBe(
      'off',
    );
  });
});

describe('TimeSpan values (timer schedules, functionTimeout)', () => {
  it(".NET's TimeSpan.Parse forms: days alone, hh:mm, d.hh:mm:ss, d:hh:mm:ss", () => {
    const hour = 3_600_000;
    expect(parseTimeSpan('6')).toBe(6 * 24 * hour);
    expect(parseTimeSpan('00:05')).toBe(5 * 60_000);
    expect(parseTimeSpan('6:12:14')).toBe(6 * hour + 12 * 60_000 + 14_000);
    expect(parseTimeSpan('6.12:14:45')).toBe(parseTimeSpan('6:12:14:45'));
    expect(parseTimeSpan('00:00:59.5')).toBe(59_500);
  });

  it('reads three numbers whose first is no hour as days, hours, minutes: 24:00:00 is 24 days', () => {
    expect(parseTimeSpan('24:00:00')).toBe(24 * 86_400_000);
    expect(parseTimeSpan('23:00:00')).toBe(23 * 3_600_000);
  });

  it('refuses a component out of its range, as .NET does', () => {
    for (const text of ['0:60:0', '0:0:60', '6:34:14:45', '10:', ':10', '10.12', '25:30:00'])
      expect(parseTimeSpan(text), text).toBeUndefined();
  });
});
