import { createServer, type Server } from 'node:net';
import { listen, PortInUseError } from '../core/http.ts';

/**
 * Conventional ports where one exists (Azurite 10000, Cosmos 8081, Event Hubs 5672); apps bring their
 * own (`localPort` in system/apps.json: the Functions host's 7071, …).
 */
export const DEFAULT_PORTS = {
  control: 7070,
  identity: 8400,
  keyvault: 8443,
  cosmos: 8081,
  blob: 10000,
  eventhubs: 5672,
  eventgrid: 8700,
  gateway: 8600,
  /** Event Hubs over TLS, for identity-based connections (`StreamHubConnection__fullyQualifiedNamespace`). */
  'eventhubs-amqps': 5671,
} as const satisfies Record<string, number>;

/** Every port the stack needs, in `--port-base` order: the control API, the services, then the apps. */
export function stackPorts(apps: Record<string, { localPort: number }>): Record<string, number> {
  return {
    ...DEFAULT_PORTS,
    ...Object.fromEntries(Object.entries(apps).map(([name, app]) => [name, app.localPort])),
  };
}

/** What the user asked for: defaults, a base (each port = base + its position), free ports, or overrides. */
export type PortChoice = 'default' | 'free' | { base: number };

const bind = async (port: number) => {
  // A connection while it is held is reset at once (rather than left waiting for a server that is not there).
  const server = createServer((socket) => socket.destroy());
  await listen(server, port);
  return server;
};

const closeAll = (servers: Server[]) =>
  Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));

/** Whether a port can be listened on now (nothing holds it). */
export const portIsFree = (port: number): Promise<boolean> =>
  bind(port).then(
    (server) => closeAll([server]).then(() => true),
    () => false,
  );

/** A port that was free a moment ago, outside the ephemeral range (for tests that start one server on it). */
export async function freePort(): Promise<number> {
  const server = await bind(0);
  const port = (server.address() as { port: number }).port;
  await closeAll([server]);
  return port;
}

export class BusyPortError extends Error {}

/** Ports chosen, each held by a listening socket of this process until `release` hands it over. */
export interface PortReservation {
  ports: Record<string, number>;
  /** Stops holding these ports (by name), for whoever listens on them next; again is harmless. */
  release(names: string[]): Promise<void>;
}

/**
 * Decides every component's port before any starts, so each can be told the others' addresses, and
 * holds each until its component is about to listen: a free port let go at once could be handed to
 * any other process's listen(0) while the components before it start (seen in CI: "port … is already
 * in use" for the functions host). Fixed ports are checked up front: a busy one fails at once, naming
 * the port and the component.
 */
export async function reservePorts(
  defaults: Record<string, number>,
  choice: PortChoice,
  overrides: Record<string, number> = {},
): Promise<PortReservation> {
  const unknown = Object.keys(overrides).filter((name) => !(name in defaults));
  if (unknown.length)
    throw new Error(
      `no component named ${unknown.join(', ')}; ports are for ${Object.keys(defaults).join(', ')}`,
    );
  const count = Object.keys(defaults).length;
  if (typeof choice === 'object' && choice.base + count - 1 > 65535)
    throw new Error(
      `port base ${choice.base} is too high: the stack needs ${count} ports from it; choose at most ${65536 - count} (--port-base)`,
    );
  const ports: Record<string, number> = {};
  const held = new Map<string, Server>();
  const release = (names: string[]) =>
    closeAll(
      names.flatMap((name) => {
        const server = held.get(name);
        held.delete(name);
        return server ? [server] : [];
      }),
    ).then(() => {});
  // The ports the user gave are held first: a free draw for another component then never lands on one
  // (a stopped stack's ports, given again, were free to draw; seen in CI: "given to both control and …").
  const order = [...Object.entries(defaults).entries()].sort(
    ([, [a]], [, [b]]) => Number(b in overrides) - Number(a in overrides),
  );
  try {
    for (const [index, [name, port]] of order) {
      const wanted =
        overrides[name] ?? (choice === 'default' ? port : choice === 'free' ? 0 : choice.base + index);
      const choose = `choose other ports (--port-base, --${name}-port)`;
      // Held by this stack itself: "in use" would send the user looking for another program.
      const taken = Object.entries(ports).find(([, given]) => given === wanted && wanted !== 0);
      if (taken)
        throw new BusyPortError(
          `port ${wanted} is given to both ${taken[0]} and ${name}; choose other ports (--port-base, --${taken[0]}-port, --${name}-port)`,
        );
      const server = await bind(wanted).catch((error: NodeJS.ErrnoException) => {
        if (error instanceof PortInUseError)
          throw new BusyPortError(
            `port ${wanted} for ${name} is already in use (EADDRINUSE); free it or ${choose}`,
          );
        if (error.code === 'EACCES')
          throw new BusyPortError(
            `port ${wanted} for ${name} is not open to this user (EACCES; on Linux, ports below 1024 need privileges); ${choose}`,
          );
        throw error;
      });
      held.set(name, server);
      const address = server.address();
      ports[name] = typeof address === 'object' && address ? address.port : wanted;
    }
  } catch (error) {
    await release([...held.keys()]);
    throw error;
  }
  return {
    ports: Object.fromEntries(Object.keys(defaults).map((name) => [name, ports[name] as number])),
    release,
  };
}

/** As reservePorts, but lets every port go at once: for callers that listen on them right away. */
export async function assignPorts(
  defaults: Record<string, number>,
  choice: PortChoice,
  overrides: Record<string, number> = {},
): Promise<Record<string, number>> {
  const { ports, release } = await reservePorts(defaults, choice, overrides);
  await release(Object.keys(ports));
  return ports;
}
