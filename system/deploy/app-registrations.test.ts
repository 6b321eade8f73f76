import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadApps, repositoryRoot } from '../../emulators/core/apps.ts';
import { testDataDir } from '../../emulators/core/testing.ts';
import { loadTopology } from '../../emulators/core/topology.ts';
import { directoryParameter, parameterVariable } from './arm.ts';
import { generatedFiles } from './generate.ts';
import { APP_REGISTRATIONS } from './paths.ts';

const data = testDataDir();
afterAll(() => data.remove());
const log = join(data.dir, 'az.jsonl');
const bin = join(data.dir, 'bin');
mkdirSync(bin);
// A stand-in az: records its arguments; `ad app create` answers an id per display name, `credential reset` a secret.
writeFileSync(
  join(bin, 'az'),
  `#!/usr/bin/env node
const args = process.argv.slice(2);
require('node:fs').appendFileSync(${JSON.stringify(log)}, JSON.stringify(args) + '\\n');
const name = args[args.indexOf('--display-name') + 1] ?? '';
if (args.slice(0, 3).join(' ') === 'ad app create') console.log('id-' + name.replace(/\\W/g, ''));
if (args.slice(0, 4).join(' ') === 'ad app credential reset') console.log('secret-of-' + args[args.indexOf('--id') + 1]);
`,
);
chmodSync(join(bin, 'az'), 0o755);

const script = join(repositoryRoot, APP_REGISTRATIONS);
const applications = Object.entries(loadTopology().directory.applications);
const apps = loadApps();
/** The addresses the script asks for (`web.on` not an app of apps.json: those taskstack deploy sets), one made-up URL each. */
const urls = Object.fromEntries(
  applications.flatMap(([, app]) =>
    app.web && !apps[app.web.on] ? [[app.web.on, `https://${app.web.on.toLowerCase()}.example`]] : [],
  ),
);
const urlArgs = (names: string[]) => names.flatMap((on) => ['--url', `${on}=${urls[on]}`]);
const variable = (application: string, part: 'clientId' | 'clientSecret') =>
  parameterVariable(directoryParameter(application, part));
const run = (...args: string[]) => {
  writeFileSync(log, '');
  const result = spawnSync('bash', [script, ...args], {
    cwd: data.dir,
    encoding: 'utf8',
    env: { PATH: `${bin}:${process.env.PATH}` },
  });
  const calls = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as string[]);
  return { ...result, calls };
};

describe('the app-registration script (system/deploy/azure/app-registrations.sh)', () => {
  it('is what generate.ts writes from the topology, and executable', () => {
    expect(readFileSync(script, 'utf8')).toBe(generatedFiles()[APP_REGISTRATIONS]);
    expect(statSync(script).mode & 0o111).toBe(0o111);
  });

  it('registers every application of the topology with its redirect URIs, identifier URI and scopes', () => {
    const out = join(data.dir, 'registrations.env');
    const result = run(...urlArgs(Object.keys(urls)), '--out', out);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const created = result.calls.filter((call) => call.slice(0, 3).join(' ') === 'ad app create');
    expect(created.map((call) => call[call.indexOf('--display-name') + 1])).toEqual(
      applications.map(([, app]) => app.displayName),
    );
    applications.forEach(([name, app], index) => {
      const call = created[index] as string[];
      const redirects = call.includes('--web-redirect-uris')
        ? call.slice(call.indexOf('--web-redirect-uris') + 1, call.indexOf('--query'))
        : [];
      // Sign-in and sign-out return addresses, on the given address; none for a registration on an app.
      const web = app.web && !apps[app.web.on] ? app.web : undefined;
      const paths = new Set([...(web?.redirectPaths ?? []), ...(web?.postLogoutRedirectPaths ?? [])]);
      expect(redirects, name).toEqual([...paths].map((path) => `${urls[web?.on as string]}${path}`));
    });
    expect(Object.keys(urls)).toEqual(['developerPortal']);
    expect(created[0]).not.toContain('--web-redirect-uris');
    expect(result.calls).toContainEqual([
      'ad',
      'app',
      'update',
      '--id',
      'id-TaskManagementAPI',
      '--identifier-uris',
      'api://id-TaskManagementAPI',
    ]);
    const api = JSON.parse(
      (result.calls.find((call) => call.includes('--set'))?.at(-1) as string).replace(/^api=/, ''),
    );
    // v2 access tokens (issuer …/v2.0), as the local provider issues; Entra's default for an API is v1.
    expect(api.requestedAccessTokenVersion).toBe(2);
    expect(api.oauth2PermissionScopes).toEqual([
      expect.objectContaining({
        value: 'user_impersonation',
        type: 'User',
        isEnabled: true,
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      }),
    ]);
    // Secrets only for the apps that sign users in, and only in the 0600 file.
    const env = readFileSync(out, 'utf8');
    // …under the names `taskstack deploy` reads the template's parameters from.
    expect(env).toContain(`${variable('taskWeb', 'clientSecret')}=secret-of-id-TaskManagementwebapp\n`);
    expect(env).toContain(`${variable('taskApi', 'clientId')}=id-TaskManagementAPI\n`);
    expect(variable('taskWeb', 'clientId')).toBe('TASKSTACK_TASK_WEB_CLIENT_ID');
    expect(env).not.toContain(variable('taskApi', 'clientSecret'));
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(result.stdout).not.toContain('secret-of');
  });

  it('prints its usage for --help and -h, exit 0, with no az call and no file written', () => {
    const usage = [
      'usage: system/deploy/azure/app-registrations.sh --url developerPortal=https://… [--out FILE]',
      'Creates the app registrations of the Task Management Service (az ad app), once per tenant, after az login.',
      "  --url NAME=URL  the address NAME's redirect URIs are on (needed: developerPortal)",
      '  --out FILE      where client ids and secrets go, mode 0600 (default .taskstack/app-registrations.env)',
      '  -h, --help      print this and exit',
      '',
    ].join('\n');
    for (const flag of ['--help', '-h']) {
      const out = join(data.dir, `help${flag}.env`);
      const result = run(...urlArgs(Object.keys(urls)), '--out', out, flag);
      expect(result.stderr, flag).toBe('');
      expect(result.status, flag).toBe(0);
      expect(result.stdout, flag).toBe(usage);
      expect(result.calls, flag).toEqual([]);
      expect(existsSync(out), flag).toBe(false);
    }
    expect(run('--help').stdout).toBe(usage);
  });

  it('refuses to run without the addresses it needs, with one line and no az call', () => {
    for (const missing of Object.keys(urls)) {
      const result = run(...urlArgs(Object.keys(urls).filter((on) => on !== missing)));
      expect(result.status, missing).toBe(2);
      expect(result.stderr.trim()).toBe(
        `app-registrations.sh: give --url ${missing}=https://… (its address)`,
      );
      expect(result.calls).toEqual([]);
    }
  });
});
