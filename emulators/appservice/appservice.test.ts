/**
 * An app declared in an apps manifest runs in the stack as App Service runs it: settings resolved from
 * the manifest's references, PORT, a health check, restarts — without a line of launcher code for it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { type Stack, start } from '../stack/launcher.ts';

const data = testDataDir();
afterAll(() => data.remove());
const appsFile = join(import.meta.dirname, 'test', 'apps.json');
const startEcho = (extra: Partial<Parameters<typeof start>[0]> = {}) =>
  start({
    dataDir: data.dir,
    ports: 'free',
    console: false,
    appsFile,
    components: ['eventhubs', 'echo'],
    ...extra,
  });

/** Expects the stack's start to fail with `message`; a stack that starts after all is stopped. */
async function expectRefused(options: Parameters<typeof startEcho>[0], message: string) {
  const started = await startEcho(options).catch((error: Error) => error);
  if (!(started instanceof Error)) await started.stop();
  expect(started).toBeInstanceOf(Error);
  expect((started as Error).message).toContain(message);
}

/** An apps manifest in the data directory declaring the test app with `changes`. */
function manifest(changes: Record<string, unknown>): string {
  const app = { kind: 'webapp', folder: 'emulators/appservice/test/app', localPort: 5090, settings: {} };
  const path = join(data.dir, `apps-${Object.keys(changes).join('-')}.json`);
  writeFileSync(path, JSON.stringify({ apps: { echo: { ...app, ...changes } } }));
  return path;
}

describe('App Service apps in the stack', () => {
  let stack: Stack;
  afterAll(() => stack?.stop());

  it('runs a declared app with its settings resolved, PORT, the site App Service names, and its folder as working directory', async () => {
    // A period in a setting's name is an underscore in the app's environment, as on App Service for Linux.
    stack = await startEcho({ settings: { echo: { Greeting: 'overridden', 'Greeting.Dotted': 'dotted' } } });
    const url = stack.description.apps.echo?.url as string;
    const body = await (await fetch(url)).json();
    expect(body).toEqual({
      settings: {
        PORT: new URL(url).port,
        Greeting: 'overridden',
        Greeting_Dotted: 'dotted',
        StreamHubConnection: stack.description.connections.StreamHubConnection,
        // The app's name, its host (in Azure <name>.azurewebsites.net), its plan's tier, its instance.
        WEBSITE_SITE_NAME: 'echo',
        WEBSITE_HOSTNAME: new URL(url).host,
        WEBSITE_SKU: 'Basic',
        WEBSITE_INSTANCE_ID: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
      cwd: join(import.meta.dirname, 'test', 'app'),
    });
    expect(await stack.health()).toEqual({ eventhubs: 'ok', echo: 'ok' });
  });

  it('restarts the app when its process dies, on the same address', async () => {
    const before = stack.pids().echo as number;
    process.kill(before, 'SIGKILL');
    await expect
      .poll(async () => stack.pids().echo !== before && (await stack.health()).echo, { timeout: 60_000 })
      .toBe('ok');
    expect((await fetch(stack.description.apps.echo?.url as string)).status).toBe(200);
    await stack.stop();
  });

  it('refuses to start an app whose start fails, whose health check fails, or whose settings name nothing', async () => {
    await expect(startEcho({ settings: { echo: { CRASH_AT_START: 'true' } } })).rejects.toThrow(
      'echo failed to start: this app refuses to start',
    );
    await expect(startEcho({ appsFile: manifest({ healthCheckPath: '/broken' }) })).rejects.toThrow(
      'echo failed to start: the health check path /broken answered 500 (App Service counts only 200–299 as healthy)',
    );
    const dangling = manifest({ settings: { X: '@nothing.value' } });
    await expect(startEcho({ appsFile: dangling })).rejects.toThrow(
      'app echo: setting X names @nothing.value, which the stack does not provide',
    );
  });
});

describe("App Service's checks of a started app", () => {
  it('takes a declared health check path as Azure does: 200–299 only, a redirect or a 404 is unhealthy', async () => {
    for (const [path, status] of [
      ['/moved', 302],
      ['/missing', 404],
    ] as const)
      await expectRefused(
        { appsFile: manifest({ healthCheckPath: path }) },
        `echo failed to start: the health check path ${path} answered ${status} (App Service counts only 200–299 as healthy)`,
      );
  });

  it('without a health check path, starts an app once it answers at all, as App Service’s warm-up ping does', async () => {
    const stack = await startEcho({ settings: { echo: { EVERY_PATH_ANSWERS: '500' } } });
    try {
      expect((await fetch(stack.description.apps.echo?.url as string)).status).toBe(500);
      expect(await stack.health()).toEqual({ eventhubs: 'ok', echo: 'ok' });
    } finally {
      await stack.stop();
    }
  });
});

describe('What App Service runs of a Node app', () => {
  const startFrom = (folder: string) =>
    startEcho({
      appsFile: manifest({ folder: `emulators/appservice/test/${folder}` }),
      components: ['echo'],
    });

  it("runs package.json's start script before main, and server.js when there is neither", async () => {
    for (const folder of ['start-script', 'candidate']) {
      const stack = await startFrom(folder);
      try {
        const body = await (await fetch(stack.description.apps.echo?.url as string)).json();
        expect(body.cwd).toBe(join(import.meta.dirname, 'test', folder));
      } finally {
        await stack.stop();
      }
    }
  });

  it('refuses a start script it cannot run in place of App Service, naming it', async () => {
    await expectRefused(
      { appsFile: manifest({ folder: 'emulators/appservice/test/unsupported' }), components: ['echo'] },
      'package.json\'s start script "next start" is what App Service runs (npm start); the local App Service runs only a start script of the form node <file>',
    );
  });
});

describe('Key Vault references in an App Service app', () => {
  it('are the secrets their references name, read with the app identity before the app starts', async () => {
    const encryptionKey = 'appservice-reference-test-key-0123';
    // Named web, the app runs as the topology's webApp identity, which may read the vault.
    const path = join(data.dir, 'apps-web.json');
    const app = { kind: 'webapp', folder: 'emulators/appservice/test/app', localPort: 5091 };
    const settings = { Greeting: '@Microsoft.KeyVault(VaultName=taskstack;SecretName=EncryptionKey)' };
    writeFileSync(path, JSON.stringify({ apps: { web: { ...app, settings } } }));
    const stack = await start({
      dataDir: data.dir,
      ports: 'free',
      console: false,
      appsFile: path,
      encryptionKey,
      components: ['identity', 'keyvault', 'web'],
    });
    try {
      const body = await (await fetch(stack.description.apps.web?.url as string)).json();
      expect(body.settings.Greeting).toBe(encryptionKey);
    } finally {
      await stack.stop();
    }
  });
});
