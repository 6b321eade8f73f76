import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadTls } from '../core/ca.ts';
import { StackClock } from '../core/clock.ts';
import { readJsonIfExists, writeFileAtomic } from '../core/files.ts';
import { NotFoundError } from '../core/ipc.ts';
import { loadSecrets } from '../core/secrets.ts';
import { loadTopology } from '../core/topology.ts';
import { type ComponentName, componentNames } from '../registry.ts';
import { compileEmulators } from './compile.ts';
import { ComponentProcess } from './component.ts';
import { Console } from './console.ts';
import { startControlServer } from './control.ts';
import { parseStackOptions, type StackOptionsInput } from './options.ts';
import { inOrder } from './order.ts';
import { assignPorts, DEFAULT_PORTS, type PortName } from './ports.ts';
import { removeStackFile, runningStack, type StackDescription, writeStackFile } from './stackfile.ts';
import { wire } from './wiring.ts';

export interface Stack {
  description: StackDescription;
  clock: StackClock;
  /** Moves the stack clock forward for every component; resolves once all have it. */
  advanceClock(ms: number): Promise<void>;
  /** Invokes a component's control action (e.g. `blob` / `runLifecycle`). */
  action(component: string, action: string, input?: unknown): Promise<unknown>;
  /** The process id of each component (they change when a crashed component is restarted). */
  pids(): Record<string, number | undefined>;
  /** Each component's health: `ok` or the reason it is not. */
  health(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

/** Starts every component, waits until each is healthy, writes stack.json and returns the running stack. */
export async function start(input: StackOptionsInput = {}): Promise<Stack> {
  const options = parseStackOptions(input);
  const { dataDir } = options;
  const other = runningStack(dataDir);
  if (other) throw new Error(`a stack is already running on ${dataDir} (pid ${other.pid}); stop it first`);

  const began = performance.now();
  mkdirSync(join(dataDir, 'logs'), { recursive: true, mode: 0o700 });
  const topology = loadTopology();
  const [tls, secrets] = await Promise.all([
    loadTls(dataDir),
    loadSecrets(dataDir, topology, options.encryptionKey),
  ]);
  const ports = await assignPorts(
    Object.keys(DEFAULT_PORTS) as PortName[],
    options.ports,
    options.portOverrides,
  );
  const wiring = wire(ports, secrets, dataDir, options.settings);

  // The clock's history is kept with the data so stack time never runs backwards across restarts.
  const clockPath = options.inMemory ? undefined : join(dataDir, 'clock.json');
  const clock = new StackClock((clockPath && readJsonIfExists(clockPath)) || []);
  const names = options.components ?? componentNames;
  const unknown = names.filter((name) => !componentNames.includes(name as ComponentName));
  if (unknown.length)
    throw new Error(`unknown component(s) ${unknown.join(', ')}; known: ${componentNames.join(', ')}`);
  const out = new Console(['stack', ...names], options.console ? process.stdout : null);
  const env = { ...process.env, NODE_EXTRA_CA_CERTS: tls.caPath };
  const entry = { path: await compileEmulators(), execArgv: [] };

  const logs: Record<string, string> = names.includes('functions')
    ? { functions: wiring.options.functions.logFile }
    : {};
  const components = (names as ComponentName[]).map((name) => {
    // The functions host's own console log sits beside its invocation log (logs.functions).
    const logName = name === 'functions' ? 'functions-host' : name;
    logs[logName] = join(dataDir, 'logs', `${logName}.log`);
    return new ComponentProcess(
      name,
      {
        type: 'start',
        name,
        options: wiring.options[name],
        stateDir: options.inMemory ? undefined : join(dataDir, 'state', name),
        tls,
        secrets,
        shifts: [...clock.shifts],
      },
      env,
      logs[logName] as string,
      out,
      entry,
    );
  });

  // Like an Azure Functions TypeScript project's prestart: the host runs the built JavaScript.
  const built = names.includes('functions')
    ? import('../../system/functions/build.ts').then(({ buildFunctionApp }) => buildFunctionApp())
    : Promise.resolve();

  const byName = new Map(components.map((component) => [component.name, component]));
  // Each component starts as soon as those it must wait for (wiring.startAfter) answer.
  const prerequisites = (component: ComponentProcess) =>
    (wiring.startAfter[component.name] ?? []).flatMap((name) => byName.get(name) ?? []);
  // Stopping runs the other way: a component stops before those it started after. The functions host
  // releases its Event Hubs partitions through blob storage as it stops; with Azurite already gone,
  // the storage SDK's retries would outlast the stop grace and the host would be killed.
  const dependents = (component: ComponentProcess) =>
    components.filter((other) => prerequisites(other).includes(component));
  const stopAll = () => inOrder(components, dependents, (component) => component.stop());
  let control: Awaited<ReturnType<typeof startControlServer>> | undefined;
  try {
    await inOrder(components, prerequisites, async (component) => {
      if (component.name === 'functions') await built;
      await launchOne(component);
    });
  } catch (error) {
    await stopAll();
    throw error;
  }

  async function launchOne(component: ComponentProcess) {
    out.progress(component.name, 'starting');
    const t0 = performance.now();
    const endpoints = await component.launch().catch((error: Error) => {
      out.progress(component.name, 'failed', error.message);
      throw new Error(`${component.name} failed to start: ${error.message}`);
    });
    checkEndpoints(component.name, endpoints, wiring.expected[component.name as ComponentName]);
    await component.request({ type: 'health' });
    out.progress(component.name, 'ready', `in ${Math.round(performance.now() - t0)} ms`);
  }

  const stack: Stack = {
    clock,
    description: {
      pid: process.pid,
      dataDir,
      inMemory: options.inMemory,
      controlUrl: wiring.controlUrl,
      authUrl: wiring.authUrl,
      ...(byName.has('functions') && { baseUrl: wiring.expected.functions.baseUrl }),
      functionKey: secrets.functionKey,
      masterKey: secrets.masterKey,
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
      await Promise.all(
        components.map((component) => component.request({ type: 'clock', shifts: [...clock.shifts] })),
      );
    },
    action(component, action, actionInput) {
      const target = byName.get(component);
      if (!target) return Promise.reject(new NotFoundError(`no component ${component} is running`));
      return target.request({ type: 'action', action, input: actionInput });
    },
    pids() {
      return Object.fromEntries(components.map((component) => [component.name, component.pid]));
    },
    async health() {
      const entries = await Promise.all(
        components.map(async (component) => {
          const state = await component.request({ type: 'health' }).then(
            () => 'ok',
            (error: Error) => error.message,
          );
          return [component.name, state] as const;
        }),
      );
      return Object.fromEntries(entries);
    },
    async stop() {
      await control?.close();
      await stopAll();
      removeStackFile(dataDir);
    },
  };

  try {
    control = await startControlServer(ports.control, stack);
  } catch (error) {
    await stopAll();
    throw error;
  }
  writeStackFile(stack.description);
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
