import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadApps, repositoryRoot } from '../../emulators/core/apps.ts';
import { testDataDir } from '../../emulators/core/testing.ts';
import { loadTopology } from '../../emulators/core/topology.ts';
import { parameterVariable } from './arm.ts';
import { TEMPLATE } from './paths.ts';

const data = testDataDir();
afterAll(() => data.remove());
const KEY = 'a-32-character-encryption-key!!!';
const apps = loadApps();
const template = JSON.parse(readFileSync(join(repositoryRoot, TEMPLATE), 'utf8'));
/** Every template parameter without a default, as the environment gives them (EncryptionKey: a real-looking key). */
const required = Object.entries(
  template.parameters as Record<string, { defaultValue?: unknown; type: string }>,
)
  .filter(([, parameter]) => parameter.defaultValue === undefined)
  .map(([name, parameter]) => ({ name, secure: parameter.type === 'securestring' }));
const givenValue = (name: string) => (name === 'EncryptionKey' ? KEY : `value-of-${name}-given`);
const PARAMETERS = Object.fromEntries(
  required.map(({ name }) => [parameterVariable(name), givenValue(name)]),
);
const secrets = required.filter(({ secure }) => secure).map(({ name }) => givenValue(name));
/** The deployment's outputs, as ARM would give them: each app's site name and address. */
const OUTPUTS = {
  ...Object.fromEntries(
    Object.keys(apps).flatMap((app) => [
      [`${app}Name`, { type: 'String', value: `tasks-${app}-x1` }],
      [`${app}Url`, { type: 'String', value: `https://tasks-${app}-x1.azurewebsites.net` }],
    ]),
  ),
  apimName: { type: 'String', value: 'tasks-apim-x1' },
  gatewayUrl: { type: 'String', value: 'https://tasks-apim-x1.azure-api.net' },
};
/** The registrations that sign users in to an app of apps.json: deploy gives them the site's redirect URIs. */
const signIns = Object.entries(loadTopology().directory.applications).flatMap(([name, registration]) =>
  registration.web && apps[registration.web.on] ? [{ name, web: registration.web }] : [],
);
/** Each reads the registration's redirect URIs, then sets them with the site's added. */
const redirectUpdates = signIns.flatMap(() => ['ad app show', 'ad app update']);
/** What the tenant's registrations already hold (another environment's site). */
const REGISTERED = ['https://tasks-web-b-other.azurewebsites.net/signin-oidc'];
/** The az command each app is deployed with, by kind. */
const ZIP_DEPLOY = { functionapp: 'functionapp deployment source config-zip', webapp: 'webapp deploy' };
const zipDeploys = Object.values(apps).map((app) => ZIP_DEPLOY[app.kind]);
const log = join(data.dir, 'az.jsonl');
const packages = join(data.dir, 'out');

/** A stand-in `az`: records its arguments (and what a @parameters file held), answers like az would. */
const fakeAz = `#!/usr/bin/env node
const { appendFileSync, readFileSync } = require('node:fs');
const args = process.argv.slice(2);
const files = args.filter((a) => a.startsWith('@') && a.includes('secure')).map((a) => readFileSync(a.slice(1), 'utf8'));
appendFileSync(${JSON.stringify(log)}, JSON.stringify({ args, files }) + '\\n');
if (process.env.FAKE_AZ_FAIL && args.join(' ').includes(process.env.FAKE_AZ_FAIL)) process.exit(3);
if (args[0] === 'deployment') console.log(${JSON.stringify(JSON.stringify(OUTPUTS))});
if (args[0] === 'rest') console.log('fake-subscription-key');
if (args.slice(0, 3).join(' ') === 'ad app show') console.log(${JSON.stringify(JSON.stringify(REGISTERED))});
if (args[0] === 'functionapp' && args[1] === 'keys') console.log('fake-function-key');
`;
const bin = join(data.dir, 'bin');
const az = join(bin, 'az');
spawnSync('mkdir', ['-p', bin, packages]);
writeFileSync(az, fakeAz);
chmodSync(az, 0o755);
for (const app of Object.keys(apps)) writeFileSync(join(packages, `${app}.zip`), 'zip');

function taskstack(args: string[], env: Record<string, string> = {}) {
  writeFileSync(log, '');
  const result = spawnSync(process.execPath, ['emulators/stack/taskstack.mjs', 'deploy', ...args], {
    cwd: repositoryRoot,
    encoding: 'utf8',
    env: { PATH: `${bin}:${process.env.PATH}`, ...env },
  });
  const calls = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { args: string[]; files: string[] });
  return { ...result, calls };
}

const target = join(data.dir, 'target.json');
const common = ['--resource-group', 'rg1', '--packages', packages, '--target-file', target];

describe('taskstack deploy', () => {
  it('--dry-run says what a run would refuse, first, and still prints every command', () => {
    const { TASKSTACK_ENCRYPTION_KEY: _, ...noEncryptionKey } = PARAMETERS;
    const result = taskstack(
      ['--resource-group', 'rg1', '--packages', join(data.dir, 'none'), '--dry-run'],
      noEncryptionKey,
    );
    expect(result.status).toBe(0);
    expect(result.calls).toEqual([]);
    const lines = result.stdout.trim().split('\n');
    expect(lines.slice(0, 2)).toEqual([
      "# a run would stop here: set TASKSTACK_ENCRYPTION_KEY (the template's parameter EncryptionKey) before deploying",
      expect.stringMatching(
        /^# a run would stop here: .*\/none\/functions\.zip, .* missing: run npm run package first$/,
      ),
    ]);
    expect(lines[2]).toMatch(/^az deployment group create /);
  });

  it('--dry-run prints the az commands in order and runs none', () => {
    const result = taskstack([...common, '--dry-run'], PARAMETERS);
    expect(result.status).toBe(0);
    expect(result.calls).toEqual([]);
    const lines = result.stdout.trim().split('\n');
    expect(lines.map((line) => line.split(' --')[0])).toEqual([
      'az deployment group create',
      ...redirectUpdates.map((command) => `az ${command}`),
      ...zipDeploys.map((command) => `az ${command}`),
      'az deployment group create',
      'az functionapp keys list',
      'az rest',
      expect.stringMatching(/^# then writes .*target\.json: target, resourceGroup, baseUrl/),
    ]);
    expect(lines[1 + redirectUpdates.length + zipDeploys.length]).toContain('--parameters codeDeployed=true');
    // Given in the environment, no secret is printed.
    for (const secret of secrets) expect(result.stdout).not.toContain(secret);
    expect(existsSync(target)).toBe(false);
  });

  it('runs them with az, secrets only in a parameters file, and writes the target file from the outputs', () => {
    const result = taskstack(common, PARAMETERS);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const command = (args: string[]) =>
      args
        .slice(
          0,
          args.findIndex((arg) => arg.startsWith('--')),
        )
        .join(' ');
    expect(result.calls.map((call) => command(call.args))).toEqual([
      'deployment group create',
      ...redirectUpdates,
      ...zipDeploys,
      'deployment group create',
      'functionapp keys list',
      'rest',
    ]);
    // The All APIs subscription's key, through the management API.
    expect(result.calls.at(-1)?.args.join(' ')).toContain(
      '/service/tasks-apim-x1/subscriptions/task-manager-all-apis/listSecrets',
    );
    // Each registration an app signs users in with gets the redirect URIs on that app's site, sign-out's too
    // (Entra accepts only registered post-logout redirects): known only now, so the script could not set them.
    expect(signIns.map(({ web }) => web.on)).toContain('web-b');
    // Added to those the registration has: another environment's site keeps signing in.
    signIns.forEach(({ name, web }, index) => {
      const site = `https://tasks-${web.on}-x1.azurewebsites.net`;
      const id = givenValue(`${name}ClientId`);
      expect(result.calls[1 + 2 * index]?.args, name).toEqual([
        'ad',
        'app',
        'show',
        '--id',
        id,
        '--query',
        'web.redirectUris',
        '--output',
        'json',
      ]);
      expect(result.calls[2 + 2 * index]?.args, name).toEqual([
        'ad',
        'app',
        'update',
        '--id',
        id,
        '--web-redirect-uris',
        ...REGISTERED,
        ...new Set([...web.redirectPaths, ...web.postLogoutRedirectPaths].map((path) => site + path)),
      ]);
    });
    // Each app's zip to its own site.
    Object.keys(apps).forEach((app, index) => {
      const call = result.calls[1 + redirectUpdates.length + index];
      expect(call?.args, app).toEqual(
        expect.arrayContaining(['--name', `tasks-${app}-x1`, '--resource-group', 'rg1']),
      );
      expect(call?.args.join(' '), app).toContain(`${app}.zip`);
    });
    expect(result.calls[0]?.args).toEqual(
      expect.arrayContaining(['--template-file', 'system/deploy/azure/template.json']),
    );
    // Every parameter without a default, from TASKSTACK_<NAME>, in the parameters file only.
    expect(required.map(({ name }) => name)).toEqual(
      expect.arrayContaining(['EncryptionKey', 'EntraClientSecret', 'sessionSecret', 'taskWebClientSecret']),
    );
    expect(JSON.parse(result.calls[0]?.files[0] as string).parameters).toEqual(
      Object.fromEntries(required.map(({ name }) => [name, { value: givenValue(name) }])),
    );
    for (const secret of secrets) {
      for (const call of result.calls) expect(call.args.join(' ')).not.toContain(secret);
      expect(result.stdout).not.toContain(secret);
    }
    expect(JSON.parse(readFileSync(target, 'utf8'))).toEqual({
      target: 'azure',
      resourceGroup: 'rg1',
      baseUrl: 'https://tasks-functions-x1.azurewebsites.net',
      webBaseUrl: 'https://tasks-web-x1.azurewebsites.net',
      gatewayUrl: 'https://tasks-apim-x1.azure-api.net',
      authUrl: 'https://login.microsoftonline.com',
      functionKey: 'fake-function-key',
      subscriptionKey: 'fake-subscription-key',
      apps: Object.fromEntries(
        Object.keys(apps).map((app) => [app, { url: `https://tasks-${app}-x1.azurewebsites.net` }]),
      ),
    });
    // The secure parameters file is gone.
    const secureFile = result.calls[0]?.args.find((arg) => arg.includes('secure'))?.slice(1) as string;
    expect(existsSync(secureFile)).toBe(false);
  });

  it('stops at the first failing command, naming it, and writes no target file', () => {
    const failing = join(data.dir, 'failing.json');
    const result = taskstack(['--resource-group', 'rg1', '--packages', packages, '--target-file', failing], {
      ...PARAMETERS,
      FAKE_AZ_FAIL: 'config-zip',
    });
    expect(result.status).toBe(1);
    expect(result.stderr.trim()).toBe('taskstack deploy: az functionapp deployment source failed (exit 3)');
    expect(result.calls).toHaveLength(2 + redirectUpdates.length);
    expect(existsSync(failing)).toBe(false);
  });

  it('refuses to deploy without a parameter or the packages, with one line and no az call', () => {
    const { TASKSTACK_ENCRYPTION_KEY: _, ...noEncryptionKey } = PARAMETERS;
    const noKey = taskstack(common, noEncryptionKey);
    expect(noKey.status).toBe(1);
    expect(noKey.stderr.trim()).toBe(
      "taskstack deploy: set TASKSTACK_ENCRYPTION_KEY (the template's parameter EncryptionKey) before deploying",
    );
    // The registration web-b signs in with (app-registrations.sh writes it under this name).
    const noClient = taskstack(common, { ...PARAMETERS, TASKSTACK_TASK_WEB_CLIENT_ID: '' });
    expect(noClient.status).toBe(1);
    expect(noClient.stderr.trim()).toBe(
      "taskstack deploy: set TASKSTACK_TASK_WEB_CLIENT_ID (the template's parameter taskWebClientId) before deploying",
    );
    const noZip = taskstack(['--resource-group', 'rg1', '--packages', join(data.dir, 'none')], PARAMETERS);
    expect(noZip.status).toBe(1);
    expect(noZip.stderr.trim()).toMatch(/ missing: run npm run package first$/);
    for (const app of Object.keys(apps)) expect(noZip.stderr).toContain(`/none/${app}.zip`);
    expect([...noKey.calls, ...noClient.calls, ...noZip.calls]).toEqual([]);
  });
});
