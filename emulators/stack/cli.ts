#!/usr/bin/env -S node --import tsx
/**
 * `taskstack` — start the local stack, move its clock, manage function keys, reset its data.
 *   taskstack start [--data-dir DIR] [--port-base N | --free-ports] [--<component>-port N] [--in-memory]
 *                   [--encryption-key TEXT] [--components blob,cosmos,…]
 *   taskstack clock advance --days N --hours N --minutes N --seconds N
 *   taskstack functions keys list|set|renew …   (see emulators/functions-host/cli.ts)
 *   taskstack status | stop | reset
 */
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { keysCommand } from '../functions-host/cli.ts';
import { banner } from './banner.ts';
import { CONTROL_KEY_HEADER } from './control.ts';
import { start } from './launcher.ts';
import { parseStackOptions } from './options.ts';
import { DEFAULT_PORTS, type PortName } from './ports.ts';
import { runningStack } from './stackfile.ts';

const [command = 'start', ...rest] = process.argv.slice(2);
if (command === 'functions') await functionsCommand(rest);
const portFlags = Object.fromEntries(
  Object.keys(DEFAULT_PORTS).map((name) => [`${name}-port`, { type: 'string' as const }]),
);
const { values, positionals } = parseArgs({
  args: rest,
  allowPositionals: true,
  options: {
    'data-dir': { type: 'string' },
    'port-base': { type: 'string' },
    'free-ports': { type: 'boolean' },
    components: { type: 'string' },
    'in-memory': { type: 'boolean' },
    'encryption-key': { type: 'string' },
    days: { type: 'string' },
    hours: { type: 'string' },
    minutes: { type: 'string' },
    seconds: { type: 'string' },
    function: { type: 'string' },
    ...portFlags,
  },
});
const dataDir = parseStackOptions({ dataDir: values['data-dir'] }).dataDir;

function fail(message: string): never {
  console.error(`taskstack: ${message}`);
  process.exit(1);
}

/** Calls the running stack's control API. */
async function control(method: string, path: string, body?: unknown): Promise<unknown> {
  const stack = runningStack(dataDir) ?? fail(`no stack is running on ${dataDir}`);
  const response = await fetch(`${stack.controlUrl}${path}`, {
    method,
    headers: { [CONTROL_KEY_HEADER]: stack.masterKey, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const result = await response.json();
  if (!response.ok) fail((result as { error: string }).error);
  return result;
}

/** `taskstack functions keys …`: its own flags, so it is dispatched before the others are parsed. */
async function functionsCommand(argv: string[]): Promise<never> {
  const dataDirFlag = argv.indexOf('--data-dir');
  const dir = parseStackOptions({ dataDir: dataDirFlag >= 0 ? argv[dataDirFlag + 1] : undefined }).dataDir;
  if (dataDirFlag >= 0) argv.splice(dataDirFlag, 2);
  const stack = runningStack(dir) ?? fail(`no stack is running on ${dir}`);
  try {
    console.log(await keysCommand(argv, { url: stack.controlUrl, key: stack.masterKey }));
    process.exit(0);
  } catch (error) {
    fail((error as Error).message);
  }
}

async function startCommand() {
  const portOverrides: Partial<Record<PortName, number>> = {};
  for (const name of Object.keys(DEFAULT_PORTS) as PortName[]) {
    const flag = values[`${name}-port` as keyof typeof values];
    if (typeof flag === 'string') portOverrides[name] = Number(flag);
  }
  const began = performance.now();
  const stack = await start({
    dataDir,
    ports: values['free-ports']
      ? 'free'
      : values['port-base']
        ? { base: Number(values['port-base']) }
        : 'default',
    portOverrides,
    inMemory: values['in-memory'] ?? false,
    components: values.components?.split(',').map((name) => name.trim()),
    encryptionKey: values['encryption-key'] ?? process.env.TASKSTACK_ENCRYPTION_KEY,
  }).catch((error: Error) => fail(error.message));
  console.log(banner(stack.description, performance.now() - began));
  let stopping = false;
  const shutdown = async () => {
    if (stopping) process.exit(130); // a second Ctrl-C: do not wait any longer
    stopping = true;
    console.log('stopping…');
    await stack.stop();
    console.log('stopped.');
    process.exit(0);
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

switch (command) {
  case 'start':
    await startCommand();
    break;
  case 'status':
    console.log(JSON.stringify(await control('GET', '/health'), null, 2));
    break;
  case 'clock':
    if (positionals[0] !== 'advance') fail('usage: taskstack clock advance --minutes N');
    console.log(
      JSON.stringify(
        await control(
          'POST',
          '/clock/advance',
          Object.fromEntries(
            (['days', 'hours', 'minutes', 'seconds'] as const)
              .filter((unit) => values[unit] !== undefined)
              .map((unit) => [unit, Number(values[unit])]),
          ),
        ),
      ),
    );
    break;
  case 'stop': {
    const stack = runningStack(dataDir) ?? fail(`no stack is running on ${dataDir}`);
    process.kill(stack.pid, 'SIGTERM');
    break;
  }
  case 'reset':
    if (runningStack(dataDir)) fail(`a stack is running on ${dataDir}; stop it first`);
    rmSync(dataDir, { recursive: true, force: true });
    console.log(`removed ${dataDir}`);
    break;
  default:
    fail(`unknown command ${command}; use start, status, clock advance, functions keys, stop or reset`);
}
