import type { Emulator } from './core/emulator.ts';

/**
 * Every component the launcher can start, in start order of no importance (ports are assigned up
 * front, so none waits for another). Loaded lazily: each component's process imports only its own code.
 */
export const registry = {
  identity: () => import('./identity/index.ts'),
  blob: () => import('./blob/index.ts'),
  cosmos: () => import('./cosmos/index.ts'),
  keyvault: () => import('./keyvault/index.ts'),
  eventhubs: () => import('./eventhubs/index.ts'),
  eventgrid: () => import('./eventgrid/index.ts'),
  functions: () => import('./functions-host/index.ts'),
} satisfies Record<string, () => Promise<{ default: Emulator }>>;

export type ComponentName = keyof typeof registry;
export const componentNames = Object.keys(registry) as ComponentName[];

export async function loadEmulator(name: string): Promise<Emulator> {
  const load = registry[name as ComponentName];
  if (!load) throw new Error(`unknown component ${name}`);
  return (await load()).default;
}
