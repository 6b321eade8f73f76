import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { CosmosClient } from '@azure/cosmos';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, describe, expect, it } from 'vitest';
import { loadApps } from '../core/apps.ts';
import { heapFlags, MALLOC_ENV } from '../core/heap.ts';
import { testDataDir, waitFor } from '../core/testing.ts';
import { hostOfKind, serviceNames } from '../registry.ts';
import { CONTROL_KEY_HEADER } from './control.ts';
import { type Stack, start } from './launcher.ts';
import { stackFilePath } from './stackfile.ts';
import { accepts, alive, descendants, everyComponent, portsOf, runCli } from './test-support.ts';

const data = testDataDir();
afterAll(() => data.remove());

const readStackFile = () => JSON.parse(readFileSync(stackFilePath(data.dir), 'utf8'));

describe('the launcher', () => {
  let stack: Stack;
  /** POST /functions/managetask through the gateway, with the subscription key. */
  const throughGateway = () =>
    fetch(`${stack.description.gatewayUrl}/functions/managetask`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'Ocp-Gateway-Subscription-Key': stack.description.subscriptionKey as string,
      },
      body: JSON.stringify({ Title: 'through the gateway' }),
    });

  it('starts every component and describes them in stack.json once healthy', async () => {
    stack = await start({ dataDir: data.dir, ports: 'free', console: false });
    const file = readStackFile();
    expect(statSync(stackFilePath(data.dir)).mode & 0o777).toBe(0o600);
    for (const field of ['authUrl', 'functionKey', 'masterKey', 'subscriptionKey', 'controlUrl', 'logs']) {
      expect(file[field], field).toBeTruthy();
    }
    expect(Object.keys(file.connections)).toEqual(
      expect.arrayContaining([
        'StorageConnection',
        'AzureWebJobsStorage',
        'DocumentDbConnection',
        'StreamHubConnection__fullyQualifiedNamespace',
      ]),
    );
    expect(Object.keys(file.secrets).sort()).toEqual(['DocumentDbConnection', 'EncryptionKey']);
    expect(Object.keys(file.endpoints).sort()).toEqual(everyComponent.sort());
    // Each component's console log is logs/<name>.log; the functions host's invocation log sits beside it.
    const logDir = join(data.dir, 'logs');
    expect(file.logs).toEqual({
      ...Object.fromEntries(everyComponent.map((name) => [name, join(logDir, `${name}.log`)])),
      functions: join(logDir, 'functions.jsonl'),
      'functions-host': join(logDir, 'functions.log'),
    });
    for (const path of Object.values(file.logs as Record<string, string>))
      expect(existsSync(path), path).toBe(true);
    expect(await stack.health()).toEqual(Object.fromEntries(everyComponent.map((name) => [name, 'ok'])));
    // Each trusts the data directory's CA as OpenSSL's file, not through NODE_EXTRA_CA_CERTS (openSslTrust),
    // and runs with its emulator's heap flags (the web apps' host is appservice) and the malloc settings,
    // as does Azurite under the blob component.
    const apps = loadApps();
    const mallocEnv = Object.entries(MALLOC_ENV).map(([name, value]) => `${name}=${value}`);
    const [azurite, ...more] = descendants(stack.pids().blob as number);
    expect(more).toEqual([]);
    const azuriteEnv = readFileSync(`/proc/${azurite}/environ`, 'utf8').split('\0');
    expect(azuriteEnv).toEqual(expect.arrayContaining(mallocEnv));
    // Each app's host keeps a code cache of its own, named by the app's folder (web apps A and B: one app).
    const caches: Record<string, string | undefined> = {};
    for (const [name, pid] of Object.entries(stack.pids())) {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      caches[name] = argv.find((arg) => arg.startsWith('--cache='));
      expect(argv, name).toContain('--use-openssl-ca');
      const kind = apps[name]?.kind;
      expect(argv, name).toEqual(expect.arrayContaining(heapFlags(kind ? hostOfKind[kind] : name)));
      expect(env, name).toContain(`SSL_CERT_FILE=${join(data.dir, 'ca', 'ca.pem')}`);
      expect(env, name).toEqual(expect.arrayContaining(mallocEnv));
      expect(
        env.filter((entry) => entry.startsWith('NODE_EXTRA_CA_CERTS=')),
        name,
      ).toEqual([]);
    }
    expect(caches.functions).toMatch(/^--cache=app-[0-9a-f]{16}$/);
    expect(caches.web).toMatch(/^--cache=app-[0-9a-f]{16}$/);
    expect(caches['web-b']).toBe(caches.web);
    expect(caches.functions).not.toBe(caches.web);
    for (const name of serviceNames) expect(caches[name], name).toBeUndefined();

    // Each address answers on the wire.
    const urls = Object.values(file.endpoints as Record<string, Record<string, string>>)
      .flatMap((endpoints) => Object.values(endpoints))
      .filter((value) => /^https?:\/\//.test(value));
    for (const url of urls) expect(await fetch(url).then((r) => r.status), url).toBeGreaterThanOrEqual(200);
  });

  it('runs the apps of system/apps.json wired to each other: web app A, web app B signing in at the provider, both behind the gateway', async () => {
    const { webBaseUrl, apps, testUsers } = readStackFile();
    const listed = await fetch(`${webBaseUrl}/api/tasks`);
    expect(listed.status).toBe(200);
    expect(await listed.json()).toEqual([]);
    // B sends a visitor to the provider with its registered redirect URI: the provider shows its sign-in page.
    const index = await fetch(apps['web-b'].url, { redirect: 'manual' });
    expect(index.status).toBe(302);
    const authorize = new URL(index.headers.get('location') ?? '');
    expect(authorize.origin).toBe(readStackFile().authUrl);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${apps['web-b'].url}/signin-oidc`);
    // Accepted (an unregistered redirect URI gets AADSTS50011's page): on to the provider's sign-in page.
    const accepted = await fetch(authorize, { redirect: 'manual' });
    expect(accepted.status, await accepted.clone().text()).toBe(303);
    expect(new URL(accepted.headers.get('location') ?? '', authorize).pathname).toMatch(/^\/[\w-]+\/login\//);
    // The gateway publishes both: the function app's managetask and web app A's task API.
    const { gatewayUrl, subscriptionKey, portalUrl } = readStackFile();
    expect(portalUrl).toBe(`${gatewayUrl}/developer`);
    expect((await fetch(`${portalUrl}/`)).status).toBe(200);
    const key = { 'Ocp-Gateway-Subscription-Key': subscriptionKey, 'content-type': 'application/json' };
    const created = await fetch(`${gatewayUrl}/functions/managetask`, {
      method: 'POST',
      headers: key,
      body: JSON.stringify({ Title: 'through the gateway' }),
    });
    expect(created.status).toBe(200);
    expect((await created.json()).Title).toBe('through the gateway');
    const viaWeb = await fetch(`${gatewayUrl}/web/api/tasks`, {
      method: 'POST',
      headers: key,
      body: JSON.stringify({ title: 'web through the gateway' }),
    });
    expect(viaWeb.status).toBe(200);
    expect(
      (await (await fetch(`${webBaseUrl}/api/tasks`)).json()).map((t: { title: string }) => t.title),
    ).toEqual(['web through the gateway']);
    const keyless = await fetch(`${gatewayUrl}/web/api/tasks`);
    expect(keyless.status).toBe(401);
    expect(testUsers.map((user: { userPrincipalName: string }) => user.userPrincipalName)).toEqual([
      'alice@taskstack.onmicrosoft.com',
      'bob@taskstack.onmicrosoft.com',
    ]);
  });

  it('serves the control API only with the master key, and moves the clock for every component', async () => {
    const { controlUrl, masterKey } = stack.description;
    expect((await fetch(`${controlUrl}/clock`)).status).toBe(401);
    expect((await fetch(`${controlUrl}/clock`, { headers: { [CONTROL_KEY_HEADER]: 'wrong' } })).status).toBe(
      401,
    );
    const before = stack.clock.now();
    const moved = await fetch(`${controlUrl}/clock/advance`, {
      method: 'POST',
      headers: { [CONTROL_KEY_HEADER]: masterKey },
      body: JSON.stringify({ minutes: 5 }),
    });
    expect(moved.status).toBe(200);
    expect(Date.parse((await moved.json()).now) - before).toBeGreaterThanOrEqual(5 * 60_000);
    const bad = await fetch(`${controlUrl}/clock/advance`, {
      method: 'POST',
      headers: { [CONTROL_KEY_HEADER]: masterKey },
      body: '{"minutes": -1}',
    });
    expect(bad.status).toBe(400);
    const garbage = await fetch(`${controlUrl}/clock/advance`, {
      method: 'POST',
      headers: { [CONTROL_KEY_HEADER]: masterKey },
      body: '{',
    });
    expect(garbage.status).toBe(400);
    const unknown = await fetch(`${controlUrl}/no/such/thing`, {
      headers: { [CONTROL_KEY_HEADER]: masterKey },
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'no control operation GET /no/such/thing' });
    const noAction = await fetch(`${controlUrl}/components/blob/noSuchAction`, {
      method: 'POST',
      headers: { [CONTROL_KEY_HEADER]: masterKey },
    });
    expect(noAction.status).toBe(404);
    expect(await noAction.json()).toEqual({ error: 'no action noSuchAction' });
    const noComponent = await fetch(`${controlUrl}/components/nothing/runLifecycle`, {
      method: 'POST',
      headers: { [CONTROL_KEY_HEADER]: masterKey },
    });
    expect(noComponent.status).toBe(404);
  });

  it('restarts a component that dies', async () => {
    const before = stack.pids().blob;
    process.kill(before as number, 'SIGKILL');
    await expect
      .poll(() => stack.pids().blob !== before && alive(stack.pids().blob), { timeout: 60_000 })
      .toBe(true);
    await expect.poll(async () => (await stack.health()).blob, { timeout: 60_000 }).toBe('ok');
  });

  it('moves the clock even when a component dies before it takes the move (its restart starts from the moved clock)', async () => {
    const before = stack.pids().keyvault as number;
    // Stopped, it cannot answer the clock message; killed, it never will.
    process.kill(before, 'SIGSTOP');
    const moved = stack.advanceClock(60_000);
    process.kill(before, 'SIGKILL');
    await moved;
    await expect
      .poll(async () => stack.pids().keyvault !== before && (await stack.health()).keyvault, {
        timeout: 60_000,
      })
      .toBe('ok');
  });

  it('says when a running component does not answer (a stopped process, a held event loop): `status` and a clock move return, and it takes the move once it answers', async () => {
    const { controlUrl, masterKey, connections } = stack.description;
    const pid = stack.pids().cosmos as number;
    const notAnswering = 'cosmos is not answering (no reply within 5 s)';
    const moveMessage = `the clock moved, but ${notAnswering}: it takes the move once it answers again`;
    process.kill(pid, 'SIGSTOP');
    let results: [Awaited<ReturnType<typeof runCli>>, Awaited<ReturnType<typeof runCli>>, Response];
    try {
      results = await Promise.all([
        runCli(['status', '--data-dir', data.dir]),
        runCli(['clock', 'advance', '--days', '1', '--data-dir', data.dir]),
        fetch(`${controlUrl}/clock/advance`, {
          method: 'POST',
          headers: { [CONTROL_KEY_HEADER]: masterKey },
          body: JSON.stringify({ days: 1 }),
        }),
      ]);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const [status, cliMove, apiMove] = results;
    expect(status.status).toBe(1);
    expect(JSON.parse(status.stdout)).toMatchObject({ cosmos: notAnswering, blob: 'ok', functions: 'ok' });
    expect(cliMove.status).toBe(1);
    expect(cliMove.stderr).toBe(`taskstack: ${moveMessage}\n`);
    expect(apiMove.status).toBe(504);
    expect(await apiMove.json()).toEqual({ error: moveMessage });

    // Its messages wait in order: once it answers a health check, it has both moves.
    await expect.poll(async () => (await stack.health()).cosmos, { timeout: 60_000 }).toBe('ok');
    const client = new CosmosClient(connections.DocumentDbConnection as string);
    const { resource } = await client
      .database('TasksDB')
      .container('Tasks')
      .items.create({ id: `moved-${Date.now()}`, Title: 'after the moves' });
    expect(Math.abs((resource?._ts as number) - stack.clock.now() / 1000)).toBeLessThan(60);
  });

  it('gives up on a component that keeps dying; `taskstack status` then exits non-zero until it is back', async () => {
    const status = () => runCli(['status', '--data-dir', data.dir]);
    expect((await status()).status).toBe(0);
    // The budget is three restarts a minute: each is waited for (health re-checked) before the next kill.
    for (let restart = 1; restart <= 3; restart++) {
      const before = stack.pids().eventgrid as number;
      process.kill(before, 'SIGKILL');
      await expect
        .poll(async () => stack.pids().eventgrid !== before && (await stack.health()).eventgrid, {
          timeout: 60_000,
        })
        .toBe('ok');
    }
    process.kill(stack.pids().eventgrid as number, 'SIGKILL');
    await expect
      .poll(async () => (await stack.health()).eventgrid, { timeout: 60_000 })
      .toBe('eventgrid is not running');
    // Said on the console and in its log, with what to do (the log is written as a stream: its line may
    // land a moment after the health check sees the process gone).
    const log = join(data.dir, 'logs', 'eventgrid.log');
    await expect
      .poll(() => readFileSync(log, 'utf8'), { timeout: 10_000 })
      .toContain(
        `exited (SIGKILL) again, 4 times within a minute: not restarting it. See its log, ${log}, then start the stack again\n`,
      );
    const down = await status();
    expect(down.status).toBe(1);
    expect(JSON.parse(down.stdout)).toMatchObject({ eventgrid: 'eventgrid is not running', cosmos: 'ok' });

    await stack.startComponent('eventgrid');
    expect((await status()).status).toBe(0);
  });

  it('stops one component and starts it again on the same endpoints, without restarting it meanwhile', async () => {
    const { eventgrid } = stack.description.endpoints;
    const ports = portsOf({ eventgrid: eventgrid as Record<string, string> });
    for (const port of ports) expect(await accepts(port)).toBe(true);
    await stack.stopComponent('eventgrid');
    for (const port of ports) expect(await accepts(port)).toBe(false);
    expect((await stack.health()).eventgrid).toBe('eventgrid is not running');
    await stack.startComponent('eventgrid');
    expect((await stack.health()).eventgrid).toBe('ok');
    await expect(stack.startComponent('nothing')).rejects.toThrow('no component nothing is running');
  });

  it('refuses a clock move past the year 9999, from the control API and the CLI, and keeps running', async () => {
    const { controlUrl, masterKey } = stack.description;
    const before = stack.clock.offsetMs;
    for (const body of ['{"minutes": 1e300}', '{"days": 100000000}', '{"minutes": Infinity}']) {
      const response = await fetch(`${controlUrl}/clock/advance`, {
        method: 'POST',
        headers: { [CONTROL_KEY_HEADER]: masterKey },
        body,
      });
      expect(response.status, body).toBe(400);
      expect((await response.json()).error, body).toMatch(
        /cannot go past 9999-12-31T23:59:59.999Z|unknown or negative duration|JSON/,
      );
    }
    const huge = await runCli(['clock', 'advance', '--days', '100000000', '--data-dir', data.dir]);
    expect(huge.status).toBe(1);
    expect(huge.stderr).toContain('taskstack: the stack clock cannot go past 9999-12-31T23:59:59.999Z');
    const word = await runCli(['clock', 'advance', '--days', 'many', '--data-dir', data.dir]);
    expect(word.status).toBe(1);
    expect(word.stderr).toContain('taskstack: --days must be a number ≥ 0, not many');
    expect(stack.clock.offsetMs).toBe(before);
    expect(await stack.health()).toEqual(Object.fromEntries(everyComponent.map((name) => [name, 'ok'])));
  });

  it('keeps stack.json on the host keys: renewed ones replace the start-time ones', async () => {
    const before = readStackFile().functionKey;
    const renewed = (await stack.action('functions', 'renewKey', { keyName: 'default' })) as {
      value: string;
    };
    expect(renewed.value).not.toBe(before);
    expect(readStackFile().functionKey).toBe(renewed.value);
    expect(stack.description.functionKey).toBe(renewed.value);
    const keys = (await stack.action('functions', 'listKeys')) as { functionKeys: { default: string } };
    expect(keys.functionKeys.default).toBe(renewed.value);
    // The running gateway keeps the key this start gave it, as APIM keeps a named value until the next
    // deployment: ManageTask refuses it (the restart below gives the gateway the renewed one).
    expect((await throughGateway()).status).toBe(401);
  });

  it("…and those set through the host's own admin API, as the runtime serves it", async () => {
    const { baseUrl, masterKey } = stack.description;
    const admin = (path: string, method: string, key: string, body?: unknown) =>
      fetch(`${baseUrl}${path}`, {
        method,
        headers: { 'x-functions-key': key, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const renewed = await admin('/admin/host/systemkeys/_master', 'POST', masterKey);
    expect(renewed.status).toBe(201);
    const newMaster = ((await renewed.json()) as { value: string }).value;
    const set = await admin('/admin/host/keys/default', 'PUT', newMaster, {
      name: 'default',
      value: 'set-by-the-admin-api',
    });
    expect(set.status).toBe(200);
    await waitFor('stack.json on the new keys', () => {
      const file = readStackFile();
      return file.masterKey === newMaster && file.functionKey === 'set-by-the-admin-api';
    });
    expect(stack.description).toMatchObject({ masterKey: newMaster, functionKey: 'set-by-the-admin-api' });
  });

  it('stops everything: each component exits by itself, nothing left listening or running, stack.json gone', async () => {
    const container = BlobServiceClient.fromConnectionString(
      stack.description.connections.StorageConnection as string,
    ).getContainerClient('kept');
    await container.createIfNotExists();
    await container.getBlockBlobClient('a.txt').upload('kept', 4);

    const ports = portsOf(stack.description.endpoints);
    const pids = Object.values(stack.pids());
    await stack.stop();
    expect(existsSync(stackFilePath(data.dir))).toBe(false);
    for (const port of ports) expect(await accepts(port), `port ${port}`).toBe(false);
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
    // None had to be killed: the functions host (its Event Hubs listener releases its partitions in
    // blob storage) stops before the components it depends on.
    for (const [name, path] of Object.entries(stack.description.logs))
      expect(readFileSync(path, 'utf8'), name).not.toContain('did not stop within');
  });

  it('keeps data (and renewed keys) across a restart on the same data directory, even with a damaged clock.json', async () => {
    const { functionKey } = stack.description;
    writeFileSync(
      join(data.dir, 'clock.json'),
      '[{"since": 1, "offsetMs": 0}, {"since": 2, "offsetMs": 1e300}',
    );
    // Only what holds the data checked here and the functions host that reads the keys from it (a whole
    // stack restarting on its data directory is stopping.test.ts' every start after the first).
    stack = await start({
      dataDir: data.dir,
      ports: 'free',
      console: false,
      components: ['identity', 'blob', 'cosmos', 'keyvault', 'functions', 'gateway'],
    });
    expect(readStackFile().functionKey).toBe(functionKey);
    // The gateway started with the host's renewed key, as a deployment writes it.
    expect((await throughGateway()).status).toBe(200);
    expect(JSON.parse(readFileSync(join(data.dir, 'clock.json'), 'utf8'))).toEqual([]);
    await stack.advanceClock(60_000);
    expect(stack.clock.offsetMs).toBe(60_000);
    const blob = BlobServiceClient.fromConnectionString(
      stack.description.connections.StorageConnection as string,
    )
      .getContainerClient('kept')
      .getBlobClient('a.txt');
    expect((await blob.downloadToBuffer()).toString()).toBe('kept');
    await stack.stop();
  });

  it('fails fast on a busy port, naming the port and the component', async () => {
    const squatter: Server = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const port = (squatter.address() as { port: number }).port;
    const attempt = start({
      dataDir: data.dir,
      ports: 'free',
      portOverrides: { cosmos: port },
      console: false,
    });
    await expect(attempt).rejects.toThrow(`port ${port} for cosmos is already in use`);
    squatter.close();
    expect(existsSync(stackFilePath(data.dir))).toBe(false);
  });
});
