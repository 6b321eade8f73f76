import { mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { loadApps, repositoryRoot } from '../core/apps.ts';
import { loadTls } from '../core/ca.ts';
import { checkShifts, StackClock } from '../core/clock.ts';
import { readJsonIfExists, writeFileAtomic } from '../core/files.ts';
import { bypassProxyForLoopback, PortInUseError } from '../core/http.ts';
import { NotFoundError } from '../core/ipc.ts';
import { withoutShellCredentials } from '../core/platform.ts';
import { openSecrets } from '../core/secrets.ts';
import { loadTopology, type Topology } from '../core/topology.ts';
import { loadDirectory, testUsers } from '../identity/directory.ts';
import { serviceNames } from '../registry.ts';
import { buildAppIfChanged } from './build-app.ts';
import { ANSWER_WITHIN_MS, type ComponentEntry, ComponentProcess, componentEntry } from './component.ts';
import { Console } from './console.ts';
import { startControlServer } from './control.ts';
import { parseStackOptions, type StackOptions, type StackOptionsInput } from './options.ts';
import { dependentsOf, StartInterrupted, type StartSteps, startInOrder, stopInOrder } from './order.ts';
import { reservePorts, stackPorts } from './ports.ts';
import type { Stack } from './stack.ts';
import { clearStaleStack, lockDataDir, removeStackFile, writeStackFile } from './stackfile.ts';
import { RESTART_LINE, type WatchedApp, type Watcher, watchApps } from './watch.ts';
import { useHostKey, wire } from './wiring.ts';

export type { Stack };

/** What the console says when a start must bundle the components first (seconds; at most once a change). */
export const BUILDING_COMPONENTS =
  'bundling the components (the first start since their code changed takes a few seconds more)…';

/**
 * Starts every component, waits until each is healthy, writes stack.json and returns the running stack.
 * Once `signal` aborts (a Ctrl-C during the start), whatever has started is stopped and the start
 * rejects with StartInterrupted.
 */
export async function start(
  input: StackOptionsInput = {},
  { signal }: { signal?: AbortSignal } = {},
): Promise<Stack> {
  const options = parseStackOptions(input);
  const apps = loadApps(options.appsFile);
  // A mistyped name is said first: not after a busy port, nor with a data directory made for nothing.
  const known = [...serviceNames, ...Object.keys(apps)];
  const unknown = (options.components ?? []).filter((name) => !known.includes(name));
  if (unknown.length)
    throw new Error(`unknown component(s) ${unknown.join(', ')}; known: ${known.join(', ')}`);
  // Held until the stack stops, or the start fails.
  const unlock = lockDataDir(options.dataDir);
  let keys: DataDirKeys;
  try {
    keys = openDataDirKeys(options);
  } catch (error) {
    unlock();
    throw error;
  }
  const attempt = (redraws: number): Promise<Stack> =>
    startLocked(options, apps, keys, unlock, signal).catch(async (error: Error) => {
      if (redraws === 0 || signal?.aborted || !takenMeanwhile(error, options)) {
        // Let go of the data directory only once nothing more is written to it.
        await keys.stored;
        unlock();
        throw error;
      }
      new Console(['stack'], options.console ? process.stdout : null).line(
        'stack',
        `${error.message} (taken meanwhile by another process): starting again on ports drawn anew`,
      );
      return attempt(redraws - 1);
    });
  return attempt(MAX_REDRAWS);
}

/**
 * The data directory's keys, opened once for a start and the starts made again on ports drawn anew. A
 * fresh directory's signing key is stored once made (`stored`): a stop or a failed start lets the
 * directory go only after, so that nothing writes to it then (a stack without the identity provider,
 * the one component that waits for the key, could end first).
 */
type DataDirKeys = ReturnType<typeof openSecrets> & { topology: Topology; stored: Promise<void> };

function openDataDirKeys(options: StackOptions): DataDirKeys {
  const topology = loadTopology();
  const opened = openSecrets(options.dataDir, topology, options.encryptionKey);
  return {
    ...opened,
    topology,
    stored: opened.signingKey.then(
      () => undefined,
      () => undefined,
    ),
  };
}

/** Starts made again for drawn ports taken meanwhile: one more would mean the range is crowded. */
const MAX_REDRAWS = 3;

/**
 * Whether a start failed only because a port drawn for a component (--free-ports, no --<name>-port)
 * was taken by another process between the launcher letting it go and the component listening on it.
 * The whole start is then made again on ports drawn anew, rather than that one port: services start
 * side by side and name each other (the vault's seed names Cosmos, every service the identity
 * provider, the provider the apps), so those already started would have to start again anyway.
 */
function takenMeanwhile(error: Error, options: StackOptions): boolean {
  const { cause } = error;
  return (
    options.ports === 'free' &&
    cause instanceof PortInUseError &&
    !Object.values(options.portOverrides).includes(cause.port)
  );
}

async function startLocked(
  options: StackOptions,
  apps: ReturnType<typeof loadApps>,
  keys: DataDirKeys,
  unlock: () => void,
  signal: AbortSignal | undefined,
): Promise<Stack> {
  const { dataDir } = options;
  const stale = await clearStaleStack(dataDir);

  const began = performance.now();
  mkdirSync(join(dataDir, 'logs'), { recursive: true, mode: 0o700 });
  const { topology, secrets, signingKey, renewed } = keys;
  const tls = await loadTls(dataDir);
  const reservation = await reservePorts(stackPorts(apps), options.ports, options.portOverrides);
  const { ports } = reservation;
  const wiring = wire(ports, secrets, dataDir, topology, apps, options.settings, options.components);

  // The clock's history is kept with the data so stack time never runs backwards across restarts.
  const clockPath = options.inMemory ? undefined : join(dataDir, 'clock.json');
  const history = checkShifts(clockPath ? readClockFile(clockPath) : []);
  const clock = new StackClock(history.shifts);
  if (clockPath && history.problem) writeFileAtomic(clockPath, JSON.stringify(clock.shifts));
  const names = options.components ?? wiring.components.map((plan) => plan.name);
  const releaseAll = () => reservation.release(Object.keys(ports));
  const plans = wiring.components.filter((plan) => names.includes(plan.name));
  // Each component's ports are held until it starts; those of components not run, not at all.
  const portsOf = new Map(plans.map((plan) => [plan.name, plan.ports]));
  await reservation.release(
    Object.keys(ports).filter(
      (name) => name !== 'control' && !plans.some((plan) => plan.ports.includes(name)),
    ),
  );
  const out = new Console(['stack', ...names], options.console ? process.stdout : null);
  if (stale) out.line('stack', stale);
  if (renewed.length > 0)
    out.problem(
      'stack',
      `${join(dataDir, 'keys.json')} had no ${renewed.join(', ')}: made new, so what the old key protected cannot be read`,
    );
  // A damaged clock.json must not stop a start: keep what is sound of the history, and say so.
  if (history.problem)
    out.problem(
      'stack',
      `${clockPath}: ${history.problem}; kept the ${history.shifts.length} shift(s) before it`,
    );
  // The components' environment is this shell's, as `func start` gives the host and worker theirs, but
  // for whose credential the apps use: in Azure only an app's settings say that.
  const shell = withoutShellCredentials(process.env);
  if (shell.removed.length > 0)
    out.line(
      'stack',
      `not given to the apps, from this shell: ${shell.removed.join(', ')} (in Azure an app has them only as its app settings: system/apps.json)`,
    );
  const env = bypassProxyForLoopback({ ...shell.env, NODE_EXTRA_CA_CERTS: tls.caPath });
  // Each emulator's bundle, made now if a source changed (web apps A and B run the same one). A build
  // takes seconds, so the console says why this start is slower.
  const emulators = [...new Set(plans.map((plan) => plan.emulator))];
  const announce = () => out.line('stack', BUILDING_COMPONENTS);
  const entries = new Map(
    await Promise.all(emulators.map(async (name) => [name, await componentEntry(name, announce)] as const))
      .then((built) => {
        // A first build takes seconds: a Ctrl-C meanwhile ends the start before anything is forked.
        if (signal?.aborted) throw new StartInterrupted();
        return built;
      })
      .catch(async (error) => {
        // A bundle that cannot be built: nothing starts, and no port stays held.
        await releaseAll();
        throw error;
      }),
  );

  // A fresh data directory's signing key is made while the components are forked and load their code.
  // Only the identity provider signs with it: no other start waits for it, and no other process has it.
  const identitySecrets = signingKey.then((key) => ({ ...secrets, signingKey: key }));
  // The function app whose keys stack.json names (functionKey, masterKey).
  const functionApp = plans.find((plan) => plan.emulator === 'functions')?.name;
  const logs: Record<string, string> = {};
  const components = plans.map((plan) => {
    // Every component's console log is logs/<name>.log. A functions host's invocation log (JSON lines)
    // sits beside it and takes the app's key in stack.json, its console log the key <app>-host.
    const invocationLog = plan.options.logFile as string | undefined;
    if (invocationLog) logs[plan.name] = invocationLog;
    const consoleLog = join(dataDir, 'logs', `${plan.name}.log`);
    logs[invocationLog ? `${plan.name}-host` : plan.name] = consoleLog;
    return new ComponentProcess(
      plan.name,
      {
        type: 'start',
        name: plan.name,
        emulator: plan.emulator,
        options: plan.options,
        stateDir: options.inMemory ? undefined : join(dataDir, 'state', plan.name),
        tls,
        secrets: plan.emulator === 'identity' ? identitySecrets : secrets,
        topology,
        shifts: [...clock.shifts],
      },
      env,
      consoleLog,
      out,
      entries.get(plan.emulator) as ComponentEntry,
      // At every (re)start: the endpoints the stack wired, and a health check that passes.
      async (self, endpoints) => {
        checkEndpoints(plan.name, endpoints, plan.expected);
        await self.request({ type: 'health' });
        if (plan.name === functionApp) await refreshKeys();
      },
    );
  });

  // Like a project's prestart (`npm run build`): each app's host runs the built JavaScript.
  // Once per folder: web apps A and B are one app deployed twice.
  const buildsByDir = new Map<string, Promise<string[] | undefined>>();
  const builds = new Map(
    plans.flatMap(({ name, app }) => {
      if (!app?.build) return [];
      const key = join(app.dir, app.build);
      if (!buildsByDir.has(key)) buildsByDir.set(key, buildAppIfChanged(app.dir, app.build));
      return [[name, buildsByDir.get(key)]];
    }),
  );

  const byName = new Map(components.map((component) => [component.name, component]));
  // Keys set through the host's own admin API reach stack.json as those set through the control API do.
  const host = functionApp ? byName.get(functionApp) : undefined;
  if (host) host.onChanged = () => void refreshKeys().catch(() => {});
  const hostKeys = { functionKey: secrets.functionKey, masterKey: secrets.masterKey };
  let ready = false;
  // Each component starts as soon as those it must wait for (its plan's startAfter) answer.
  const startAfter = new Map(plans.map((plan) => [plan.name, plan.startAfter]));
  const prerequisites = (component: ComponentProcess) =>
    (startAfter.get(component.name) ?? []).flatMap((name) => byName.get(name) ?? []);
  // Stopping runs the other way: a component stops before those it started after. The functions host
  // releases its Event Hubs partitions through blob storage as it stops; with Azurite already gone,
  // the storage SDK's retries would outlast the stop grace and the host would be killed.
  const dependents = dependentsOf(components, prerequisites);
  const stopAll = () => stopInOrder(components, prerequisites, (component) => component.stop());
  let control: Awaited<ReturnType<typeof startControlServer>> | undefined;
  let watcher: Watcher | undefined;
  // Components stopped through stopComponent stay down: an edit of their app does not start them.
  const stoppedOnPurpose = new Set<string>();
  // Every process is forked now, those others wait for first: a fork holds the launcher up to tens of
  // milliseconds (until the child has exec'd), and each component then loads its code while the
  // launcher releases ports and those it waits for start.
  const waitedFor = (component: ComponentProcess) => dependents(component).length;
  for (const component of [...components].sort((a, b) => waitedFor(b) - waitedFor(a)))
    component.prepare(builds.get(component.name));
  // One component's start: what comes before its launch, then the launch (see startInOrder).
  const startedAt = new Map<ComponentProcess, number>();
  const steps: StartSteps<ComponentProcess> = {
    async prepare(component) {
      await builds.get(component.name);
      out.progress(component.name, 'starting');
      startedAt.set(component, performance.now());
      await reservation.release(portsOf.get(component.name) ?? []);
    },
    async launch(component) {
      await component.launch().catch((error: Error) => {
        // A start with only some components (`--components functions`): the likely cause, named.
        const absent = (startAfter.get(component.name) ?? []).filter((name) => !byName.has(name));
        const message = absent.length
          ? `${error.message} (not running, though its settings name them: ${absent.join(', ')})`
          : error.message;
        // Stopped during its start (a Ctrl-C, another component's failure): not a failure of its own.
        if (!signal?.aborted && !component.stopping) out.progress(component.name, 'failed', message);
        throw new Error(`${component.name} failed to start: ${message}`, { cause: error });
      });
      const ms = performance.now() - (startedAt.get(component) ?? 0);
      if (!signal?.aborted) out.progress(component.name, 'ready', `in ${Math.round(ms)} ms`);
    },
    stop: (component) => component.stop(),
  };
  const launchOne = async (component: ComponentProcess) => {
    await steps.prepare(component);
    await steps.launch(component);
  };
  await startInOrder(components, prerequisites, steps, signal).catch(async (error) => {
    await releaseAll();
    throw error;
  });

  /**
   * stack.json names the host's current `default` host key and master key: keys set or renewed through
   * the host (now or in an earlier run: they persist and win over the stack's) replace the start-time ones.
   */
  async function refreshKeys() {
    const keys = (await byName.get(functionApp ?? '')?.request({ type: 'action', action: 'listKeys' })) as
      | { masterKey?: string; functionKeys?: Record<string, string> }
      | undefined;
    const functionKey = keys?.functionKeys?.default;
    if (!keys?.masterKey || !functionKey) return;
    if (hostKeys.masterKey === keys.masterKey && hostKeys.functionKey === functionKey) return;
    Object.assign(hostKeys, { masterKey: keys.masterKey, functionKey });
    if (ready) {
      Object.assign(stack.description, hostKeys);
      writeStackFile(stack.description);
    } else {
      // Before the gateway's first start: its named value then stays what this start deployed.
      useHostKey(plans, functionKey);
    }
  }

  /** The apps, one per folder and build (web apps A and B are one), with what their start's build read. */
  async function appsToWatch(): Promise<WatchedApp[]> {
    const apps = new Map<string, WatchedApp>();
    for (const plan of plans) {
      if (!plan.app) continue;
      const key = join(plan.app.dir, plan.app.build ?? '');
      const app = apps.get(key) ?? {
        ...plan.app,
        inputs: await builds.get(plan.name),
        components: [],
        restartLine: RESTART_LINE[plan.emulator as keyof typeof RESTART_LINE],
        functionApp: plan.emulator === 'functions',
        settings: plan.options.settings as Record<string, string> | undefined,
      };
      app.components.push(byName.get(plan.name) as ComponentProcess);
      apps.set(key, app);
    }
    return [...apps.values()];
  }

  const component = (name: string) => {
    const found = byName.get(name);
    if (!found) throw new NotFoundError(`no component ${name} is running`);
    return found;
  };

  const stack: Stack = {
    clock,
    description: {
      pid: process.pid,
      dataDir,
      inMemory: options.inMemory,
      controlUrl: wiring.controlUrl,
      authUrl: wiring.authUrl,
      ...(functionApp && { baseUrl: wiring.appUrl(functionApp) }),
      ...(byName.has('web') && { webBaseUrl: wiring.appUrl('web') }),
      ...(byName.has('gateway') && { gatewayUrl: wiring.gatewayUrl, portalUrl: wiring.portalUrl }),
      // The directory's test users, to sign in to web app B and the developer portal.
      ...(byName.has('identity') && {
        testUsers: testUsers(
          loadDirectory(topology, secrets, { redirectUris: {}, postLogoutRedirectUris: {} }),
        ),
      }),
      apps: Object.fromEntries(
        plans.flatMap((plan) => (plan.app ? [[plan.name, { url: wiring.appUrl(plan.name) }]] : [])),
      ),
      ...hostKeys,
      subscriptionKey: secrets.subscriptionKey,
      connections: wiring.connections,
      secrets: wiring.secrets,
      identities: Object.fromEntries(
        Object.entries(secrets.identities).map(([name, identity]) => [
          name,
          { principalId: identity.principalId, clientId: identity.clientId, ...wiring.identity(name) },
        ]),
      ),
      endpoints: Object.fromEntries(components.map((component) => [component.name, component.endpoints])),
      logs,
    },
    async advanceClock(ms) {
      clock.advance(ms);
      if (clockPath) writeFileAtomic(clockPath, JSON.stringify(clock.shifts));
      await Promise.all(components.map((component) => component.setClock(clock.shifts)));
    },
    async action(name, action, actionInput) {
      const result = await component(name).request({ type: 'action', action, input: actionInput });
      if (name === functionApp && (action === 'setKey' || action === 'renewKey')) await refreshKeys();
      return result;
    },
    async stopComponent(name) {
      stoppedOnPurpose.add(name);
      await component(name).stop();
    },
    async startComponent(name) {
      stoppedOnPurpose.delete(name);
      await launchOne(component(name));
    },
    pids() {
      return Object.fromEntries(components.map((component) => [component.name, component.pid]));
    },
    async health() {
      const entries = await Promise.all(
        components.map(async (component) => {
          const state = await component.request({ type: 'health' }, ANSWER_WITHIN_MS).then(
            () => 'ok',
            (error: Error) => error.message,
          );
          return [component.name, state] as const;
        }),
      );
      return Object.fromEntries(entries);
    },
    async stop() {
      await watcher?.close();
      await control?.close();
      await stopAll();
      removeStackFile(dataDir);
      await keys.stored;
      unlock();
    },
  };

  try {
    await reservation.release(['control']);
    control = await startControlServer(ports.control as number, stack);
    if (signal?.aborted) throw new StartInterrupted();
  } catch (error) {
    await control?.close();
    await stopAll();
    throw error;
  }
  writeStackFile(stack.description);
  ready = true;
  const watched = options.watch ? await appsToWatch() : [];
  if (watched.length > 0) {
    watcher = watchApps(watched, (component) => !stoppedOnPurpose.has(component.name));
    const folders = watcher.folders.map((dir) => relative(repositoryRoot, dir));
    if (folders.length > 0)
      out.line('stack', `watching ${folders.join(', ')}: an edit rebuilds its app and reloads it`);
  }
  out.line('stack', `ready in ${Math.round(performance.now() - began)} ms`);
  return stack;
}

function checkEndpoints(
  name: string,
  reported: Record<string, string>,
  expected: Record<string, string> | undefined,
) {
  for (const [key, value] of Object.entries(expected ?? {})) {
    if (reported[key] !== value) {
      // Values may carry keys: name the field, never print it.
      throw new Error(`${name} reports a different ${key} than the stack wired`);
    }
  }
}

/** clock.json's content; what cannot be parsed comes back as text, which checkShifts refuses. */
function readClockFile(path: string): unknown {
  try {
    return readJsonIfExists(path) ?? [];
  } catch (error) {
    return (error as Error).message;
  }
}
