/**
 * host.json read as the runtime reads it: through its configuration (names in any case, values as text,
 * two names differing only in case one setting, the later winning) and the options' setters, in their words.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { hostFileWatching, loadHostConfig } from './config.ts';

const data = testDataDir();
afterAll(() => data.remove());

let apps = 0;
/** host.json of `json` (given `version` 2.0), read by the host. */
function read(json: Record<string, unknown>, text?: string) {
  const dir = join(data.dir, `app-${++apps}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'host.json'), text ?? JSON.stringify({ version: '2.0', ...json }));
  return loadHostConfig(dir);
}
/** The folder of the app `read` wrote last. */
const lastApp = () => join(data.dir, `app-${apps}`);
const refusal = (json: Record<string, unknown>) => {
  try {
    read(json);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${JSON.stringify(json)} was taken`);
};

describe('host.json names', () => {
  it('of watching the files are read in any case too (reload on edit)', () => {
    read({ FileWatchingEnabled: false, WATCHDIRECTORIES: ['lib'], watchfiles: ['notes.txt'] });
    expect(hostFileWatching(lastApp())).toEqual({
      enabled: false,
      directories: ['node_modules', 'lib'],
      files: ['host.json', 'function.json', 'proxies.json', 'notes.txt'],
    });
  });

  it('are read in any case, and values as text, as the configuration binder reads them', () => {
    const config = read({
      FunctionTimeout: '00:02:00',
      Logging: { LogLevel: { Default: 'warning', 'Function.Hello': 'DEBUG' } },
      EXTENSIONS: {
        Http: { RoutePrefix: 'v1' },
        BLOBS: { PoisonBlobThreshold: '2', maxdegreeofparallelism: 3 },
        EventHubs: {
          MaxEventBatchSize: '7',
          BatchCheckpointFrequency: 2,
          InitialOffsetOptions: { TYPE: 'FromEnd' },
          ClientRetryOptions: { MaximumRetries: 1 },
        },
      },
    });
    expect(config.functionTimeoutMs).toBe(120_000);
    expect(config.logLevels).toEqual({ default: 'Warning', 'function.hello': 'Debug' });
    expect(config.routePrefix).toBe('v1');
    expect(config.blobs).toEqual({ poisonBlobThreshold: 2, maxDegreeOfParallelism: 3 });
    expect(config.eventHubs).toMatchObject({
      maxBatchSize: 7,
      checkpointFrequency: 2,
      initialOffset: { from: 'end' },
      clientRetry: { maximumRetries: 1 },
    });
  });

  it('differing only in case are one setting: the later in the file wins, sections merge, no error', () => {
    expect(read({ extensions: { http: { routePrefix: 'a', RoutePrefix: 'b' } } }).routePrefix).toBe('b');
    const merged = read({
      extensions: { http: { routePrefix: 'a' }, blobs: { poisonBlobThreshold: 2 } },
      Extensions: { Blobs: { PoisonBlobThreshold: 3 } },
    });
    expect(merged.routePrefix).toBe('a');
    expect(merged.blobs.poisonBlobThreshold).toBe(3);
    // A name given twice keeps its first place with its last value (JObject.Parse, JSON.parse): so `B` wins.
    const text =
      '{"version": "2.0", "extensions": {"http": {"routePrefix": "a", "RoutePrefix": "b", "routePrefix": "c"}}}';
    expect(read({}, text).routePrefix).toBe('b');
  });

  it("are parsed as Json.NET's JObject.Parse parses them: comments and trailing commas taken, a file that does not parse refused in the runtime's words", () => {
    const text = `{
  // the schema's version
  "version": "2.0", /* and a prefix */
  "extensions": { "http": { "routePrefix": "v1", }, },
}`;
    expect(read({}, text).routePrefix).toBe('v1');
    let message = '';
    try {
      read({}, '{"version": "2.0",, }');
    } catch (error) {
      message = (error as Error).message;
    }
    const file = join(lastApp(), 'host.json');
    expect(message.startsWith(`Unable to parse host configuration file '${file}'. `), message).toBe(true);
    expect(message.length).toBeGreaterThan(`Unable to parse host configuration file '${file}'. `.length);
  });

  it("but 'version', which the runtime reads from the file itself, in its one case", () => {
    expect(() => read({}, '{"Version": "2.0"}')).toThrow(
      "The host.json file is missing the required 'version' property.",
    );
  });

  it("takes log levels in any case or as numbers, and refuses another in the logging configuration's words", () => {
    expect(read({ logging: { logLevel: { default: ' none ', Host: '1', x: '' } } }).logLevels).toEqual({
      default: 'None',
      host: 'Debug',
    });
    expect(refusal({ logging: { logLevel: { default: 'loud' } } })).toBe(
      "host.json: Configuration value 'loud' is not supported.",
    );
  });

  it("refuses a value the binder cannot convert in its words, naming the option's path", () => {
    expect(refusal({ functionTimeout: 'soon' })).toBe(
      "host.json: Failed to convert configuration value at 'AzureFunctionsJobHost:FunctionTimeout' to type 'System.TimeSpan'. soon is not a valid value for TimeSpan.",
    );
    expect(refusal({ extensions: { blobs: { poisonBlobThreshold: 'five' } } })).toBe(
      "host.json: Failed to convert configuration value at 'AzureFunctionsJobHost:extensions:Blobs:PoisonBlobThreshold' to type 'System.Int32'. five is not a valid value for Int32. (Parameter 'value')",
    );
  });
});

describe('host.json extensions.eventHubs batches', () => {
  const eventHubs = (options: Record<string, unknown>) =>
    read({ extensions: { eventHubs: options } }).eventHubs;
  const refused = (options: Record<string, unknown>) => refusal({ extensions: { eventHubs: options } });

  it("reads EventHubOptions' batch settings, with their defaults", () => {
    expect(eventHubs({})).toMatchObject({
      maxBatchSize: 100,
      minBatchSize: 1,
      maxWaitTimeMs: 60_000,
      checkpointFrequency: 1,
    });
    expect(
      eventHubs({ maxEventBatchSize: 10, minEventBatchSize: 10, maxWaitTime: '00:10:00' }),
    ).toMatchObject({
      maxBatchSize: 10,
      minBatchSize: 10,
      maxWaitTimeMs: 600_000,
    });
  });

  it('reads loadBalancingUpdateInterval, 2 s by default (this host’s; the processor’s is 10 s)', () => {
    expect(eventHubs({}).loadBalancingMs).toBe(2000);
    expect(eventHubs({ loadBalancingUpdateInterval: '00:00:00.5' }).loadBalancingMs).toBe(500);
    expect(eventHubs({ LoadBalancingUpdateInterval: '00:00:00' }).loadBalancingMs).toBe(0);
  });

  it("reads the old name under eventProcessorOptions (the new one wins), not the 4.x extension's maxBatchSize", () => {
    expect(eventHubs({ eventProcessorOptions: { maxBatchSize: 5 } }).maxBatchSize).toBe(5);
    expect(eventHubs({ eventProcessorOptions: { maxBatchSize: 5 }, maxEventBatchSize: 6 }).maxBatchSize).toBe(
      6,
    );
    expect(eventHubs({ maxBatchSize: 5 }).maxBatchSize).toBe(100);
  });

  it("refuses what the setters refuse, in the extension's words", () => {
    const at = 'host.json: extensions.eventHubs.';
    expect(refused({ maxEventBatchSize: 0 })).toBe(
      `${at}maxEventBatchSize: Batch size must be larger than 0.`,
    );
    expect(refused({ eventProcessorOptions: { maxBatchSize: 0 } })).toBe(
      `${at}eventProcessorOptions.maxBatchSize: Batch size must be larger than 0.`,
    );
    expect(refused({ batchCheckpointFrequency: 0 })).toBe(
      `${at}batchCheckpointFrequency: Batch checkpoint frequency must be larger than 0.`,
    );
    expect(refused({ minEventBatchSize: -1 })).toBe(
      `${at}minEventBatchSize: Batch size must be larger than or equal to 1.`,
    );
    expect(refused({ maxWaitTime: '-00:00:01' })).toBe(
      `${at}maxWaitTime: Max Wait Time must be larger than or equal to 0.`,
    );
    expect(refused({ maxWaitTime: '00:10:00.001' })).toBe(
      `${at}maxWaitTime: Max Wait Time must be less than or equal to 10 minutes.`,
    );
    expect(refused({ loadBalancingUpdateInterval: '-00:00:01.5' })).toBe(
      `${at}loadBalancingUpdateInterval: Argument LoadBalancingUpdateInterval must be a non-negative timespan value. The provided value was -00:00:01.5000000. (Parameter 'LoadBalancingUpdateInterval')`,
    );
    expect(refused({ minEventBatchSize: 11, maxEventBatchSize: 10 })).toBe(
      'host.json: extensions.eventHubs: The minimum event batch size cannot be larger than the maximum event batch size.',
    );
    expect(refused({ maxEventBatchSize: 'ten' })).toBe(
      "host.json: Failed to convert configuration value at 'AzureFunctionsJobHost:extensions:EventHubs:MaxEventBatchSize' to type 'System.Int32'. ten is not a valid value for Int32. (Parameter 'value')",
    );
  });
});

describe("host.json's retry (ScriptJobHostOptions.Retry)", () => {
  it('is read as the binder reads it: none when absent, the strategy by name or number, exponential by default', () => {
    expect(read({}).retry).toBeUndefined();
    expect(
      read({ retry: { strategy: 'FIXEDDELAY', maxRetryCount: '2', delayInterval: '00:00:05' } }).retry,
    ).toEqual({
      retryStrategy: 'fixedDelay',
      maxRetryCount: 2,
      delayInterval: { seconds: 5 },
    });
    expect(
      read({ retry: { maxRetryCount: -1, minimumInterval: '00:00:01', maximumInterval: '00:01:00' } }).retry,
    ).toEqual({
      retryStrategy: 'exponentialBackoff',
      maxRetryCount: -1,
      minimumInterval: { seconds: 1 },
      maximumInterval: { seconds: 60 },
    });
    expect(
      read({ retry: { strategy: 1, maxRetryCount: 0, delayInterval: '00:00:00.5' } }).retry?.delayInterval,
    ).toEqual({
      seconds: 0.5,
    });
  });

  it("refuses at start what Utility.ValidateRetryOptions refuses, in its exceptions' words", () => {
    const at = 'host.json: retry: ';
    expect(refusal({ retry: { strategy: 'fixedDelay', delayInterval: '00:00:05' } })).toBe(
      `${at}Value cannot be null. (Parameter 'MaxRetryCount')`,
    );
    expect(refusal({ retry: { strategy: 'fixedDelay', maxRetryCount: 3 } })).toBe(
      `${at}Value cannot be null. (Parameter 'DelayInterval')`,
    );
    expect(refusal({ retry: { maxRetryCount: 3, minimumInterval: '00:00:01' } })).toBe(
      `${at}Value cannot be null. (Parameter 'MaximumInterval')`,
    );
    expect(refusal({ retry: { strategy: 'fixedDelay', maxRetryCount: -2, delayInterval: '00:00:05' } })).toBe(
      `${at}Specified argument was out of the range of valid values. (Parameter 'maxRetryCount')`,
    );
    expect(refusal({ retry: { strategy: 'linear', maxRetryCount: 3 } })).toBe(
      "host.json: Failed to convert configuration value at 'AzureFunctionsJobHost:Retry:Strategy' to type 'Microsoft.Azure.WebJobs.Script.Description.RetryStrategy'. linear is not a valid value for RetryStrategy.",
    );
  });
});
