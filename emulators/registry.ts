import type { Emulator } from './core/emulator.ts';

/**
 * Every emulated service the launcher starts, one component each. Loaded lazily: each component's
 * process imports only its own code.
 */
export const services = {
  identity: () => import('./identity/index.ts'),
  blob: () => import('./blob/index.ts'),
  cosmos: () => import('./cosmos/index.ts'),
  keyvault: () => import('./keyvault/index.ts'),
  eventhubs: () => import('./eventhubs/index.ts'),
  eventgrid: () => import('./eventgrid/index.ts'),
  // API Management: gateway-sim/ sits at the top level, as the layout puts it.
  gateway: () => import('../gateway-sim/index.ts'),
} satisfies Record<string, () => Promise<{ default: Emulator }>>;

/** The hosts of apps (`system/apps.json`): one component per app, running its kind's host. */
export const hosts = {
  functions: () => import('./functions-host/index.ts'),
  appservice: () => import('./appservice/index.ts'),
} satisfies Record<string, () => Promise<{ default: Emulator }>>;
export const hostOfKind = { functionapp: 'functions', webapp: 'appservice' } as const;

export type ServiceName = keyof typeof services;
export const serviceNames = Object.keys(services) as ServiceName[];
export type EmulatorName = ServiceName | keyof typeof hosts;

export async function loadEmulator(name: string): Promise<Emulator> {
  const load = { ...services, ...hosts }[name as EmulatorName];
  if (!load) throw new Error(`unknown emulator ${name}`);
  return (await load()).default;
}
