import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Emulator } from './core/emulator.ts';

/**
 * Every emulated service the launcher starts, one component each: the module whose default export is
 * its emulator, relative to this file. Each component's process loads only its own (component.ts).
 */
export const services = {
  identity: './identity/index.ts',
  blob: './blob/index.ts',
  cosmos: './cosmos/index.ts',
  keyvault: './keyvault/index.ts',
  eventhubs: './eventhubs/index.ts',
  eventgrid: './eventgrid/index.ts',
  // API Management: gateway-sim/ sits at the top level, as the layout puts it.
  gateway: '../gateway-sim/index.ts',
} as const;

/** The hosts of apps (`system/apps.json`): one component per app, running its kind's host. */
export const hosts = {
  functions: './functions-host/index.ts',
  appservice: './appservice/index.ts',
} as const;
export const hostOfKind = { functionapp: 'functions', webapp: 'appservice' } as const;

export type ServiceName = keyof typeof services;
export const serviceNames = Object.keys(services) as ServiceName[];
export type EmulatorName = ServiceName | keyof typeof hosts;

/** The absolute path of emulator `name`'s module. */
export function emulatorModule(name: string): string {
  const path = { ...services, ...hosts }[name as EmulatorName];
  if (!path) throw new Error(`unknown emulator ${name}`);
  return fileURLToPath(new URL(path, import.meta.url));
}

/** Emulator `name`, imported in this process (the container entry runs its one component so). */
export async function loadEmulator(name: string): Promise<Emulator> {
  return ((await import(pathToFileURL(emulatorModule(name)).href)) as { default: Emulator }).default;
}
