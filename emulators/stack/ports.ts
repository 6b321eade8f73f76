import { createServer, type Server } from 'node:net';
import { LOOPBACK } from '../core/http.ts';

/** Conventional ports where one exists (Functions 7071, Azurite 10000, Cosmos 8081, Event Hubs 5672). */
export const DEFAULT_PORTS = {
  control: 7070,
  functions: 7071,
  identity: 8400,
  keyvault: 8443,
  cosmos: 8081,
  blob: 10000,
  eventhubs: 5672,
  eventgrid: 8700,
} as const satisfies Record<string, number>;

export type PortName = keyof typeof DEFAULT_PORTS;

/** What the user asked for: defaults, a base (each port = base + its position), free ports, or overrides. */
export type PortChoice = 'default' | 'free' | { base: number };

const bind = (port: number) =>
  new Promise<Server>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, LOOPBACK, () => resolve(server));
  });

const closeAll = (servers: Server[]) =>
  Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));

export class BusyPortError extends Error {}

/**
 * Decides every component's port before any starts, so each can be told the others' addresses.
 * Fixed ports are checked up front: a busy one fails at once, naming the port and the component.
 */
export async function assignPorts(
  names: readonly PortName[],
  choice: PortChoice,
  overrides: Partial<Record<PortName, number>> = {},
): Promise<Record<PortName, number>> {
  const ports = {} as Record<PortName, number>;
  const held: Server[] = [];
  try {
    for (const [index, name] of names.entries()) {
      const wanted =
        overrides[name] ??
        (choice === 'free' ? 0 : choice === 'default' ? DEFAULT_PORTS[name] : choice.base + index);
      const server = await bind(wanted).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'EADDRINUSE' || error.code === 'EACCES')
          throw new BusyPortError(
            `port ${wanted} for ${name} is already in use (${error.code}); free it or choose other ports (--port-base, --${name}-port)`,
          );
        throw error;
      });
      held.push(server);
      const address = server.address();
      ports[name] = typeof address === 'object' && address ? address.port : wanted;
    }
  } finally {
    // Held until every port is chosen, so free ports are all distinct.
    await closeAll(held);
  }
  return ports;
}
