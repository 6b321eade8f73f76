/**
 * An AMQP 1.0 endpoint: a TCP server on loopback whose connections rhea runs (SASL ANONYMOUS or no SASL,
 * as the SDKs do with `UseDevelopmentEmulator=true`), or the same over TLS (AMQPS, what the SDKs speak
 * to a fully qualified namespace with a token credential). Links are routed by address to the `$cbs`,
 * `$management`, producer and consumer handlers. Nothing a client sends can take the server down:
 * protocol errors end that connection only, handler errors become AMQP errors on that link.
 */
import { connect, createServer, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import rhea, { type Connection, type EventContext, type link as Link, type Message } from 'rhea';
import type { TlsMaterial } from '../../core/ca.ts';
import { LOOPBACK, listen } from '../../core/http.ts';
import { attachConsumer } from './consumer.ts';
import { attachProducer } from './ingest.ts';
import { amqpError, type ConnectionState, type LinkHandler, type Service } from './link.ts';
import { management, putToken } from './requests.ts';

const REQUEST_NODES = new Set(['$cbs', '$management']);
/** Event Hubs closes connections idle for 240 s; clients send heartbeats well within that. */
const IDLE_TIMEOUT_MS = 240_000;

export interface AmqpServer {
  port: number;
  stop(): Promise<void>;
}

export async function startAmqpServer(
  port: number,
  makeService: (port: number) => Service,
  tls?: TlsMaterial,
): Promise<AmqpServer> {
  const container = rhea.create_container({ id: 'taskstack-eventhubs' });
  const states = new WeakMap<Connection, ConnectionState>();
  const sockets = new Set<Socket>();
  let service: Service | undefined;
  const log = (message: string) => service?.log(message);

  const stateOf = (connection: Connection) => {
    const state = states.get(connection) ?? { claims: [], replyLinks: new Map(), links: new Map() };
    states.set(connection, state);
    return state;
  };

  /** Sets up a link the client attached; a refusal is an attach answered by a detach with the error. */
  const open = (
    link: Link,
    address: string,
    attach: (state: ConnectionState, svc: Service) => LinkHandler,
  ) => {
    // Echo the terminus: the SDKs treat a missing source/target as a refused link.
    link.set_source(link.source);
    link.set_target(link.target);
    if (!service) return;
    try {
      const state = stateOf(link.connection);
      state.links.set(link, attach(state, service));
    } catch (error) {
      link.close(amqpError(error, service, address));
    }
  };

  container.on('receiver_open', ({ receiver }: EventContext) => {
    if (!receiver) return;
    const address = String(receiver.target?.address ?? '');
    open(receiver, address, (state, svc): LinkHandler => {
      if (!REQUEST_NODES.has(address)) return attachProducer(receiver, state, svc);
      const handle = address === '$cbs' ? putToken : management;
      return {
        message: (context) =>
          void answer(context, state, svc, (request) => handle(request, state, svc)).catch((error: Error) =>
            svc.log(`request on ${address} failed: ${error.message}`),
          ),
      };
    });
  });

  container.on('sender_open', ({ sender }: EventContext) => {
    if (!sender) return;
    const address = String(sender.source?.address ?? '');
    open(sender, address, (state, svc): LinkHandler => {
      if (!REQUEST_NODES.has(address)) return attachConsumer(sender, state, svc);
      // Replies are addressed to the client's receiver by its link name (the request's reply_to).
      state.replyLinks.set(sender.name, sender);
      return { closed: () => state.replyLinks.delete(sender.name) };
    });
  });

  const handlerOf = (link: Link) => states.get(link.connection)?.links.get(link);
  container.on('message', (context: EventContext) => {
    if (context.receiver) handlerOf(context.receiver)?.message?.(context);
  });
  container.on('sendable', ({ sender }: EventContext) => {
    if (sender) handlerOf(sender)?.sendable?.();
  });

  const closed = (link: Link | undefined) => {
    const links = link && states.get(link.connection)?.links;
    const handler = link && links?.get(link);
    if (!link || !handler) return;
    links?.delete(link);
    handler.closed?.();
  };
  container.on('sender_close', ({ sender }: EventContext) => closed(sender));
  container.on('receiver_close', ({ receiver }: EventContext) => closed(receiver));
  // A session or connection that ends (or a socket that drops) takes its links with it.
  const closedWhere = (connection: Connection, within: (link: Link) => boolean) => {
    for (const link of states.get(connection)?.links.keys() ?? []) if (within(link)) closed(link);
  };
  container.on('session_close', ({ connection, session }: EventContext) =>
    closedWhere(connection, (link) => link.session === session),
  );
  container.on('connection_close', ({ connection }: EventContext) => closedWhere(connection, () => true));
  container.on('connection_error', ({ connection }: EventContext) => closedWhere(connection, () => true));
  container.on('disconnected', ({ connection }: EventContext) => closedWhere(connection, () => true));
  container.on('protocol_error', (error: Error) =>
    log(`closed a connection after a protocol error: ${error.message}`),
  );
  container.on('error', (error: Error) => log(`connection error: ${error?.message ?? error}`));

  const accept = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // Frames go out as soon as they are written: with Nagle's algorithm each reply waited for the
    // client's delayed ACK: ~40 ms a management request, ~150 ms a new connection's first (put-token).
    container
      .create_connection({ idle_time_out: IDLE_TIMEOUT_MS, autoaccept: false, tcp_no_delay: true } as never)
      .accept(socket);
  };
  const server = tls ? createTlsServer({ key: tls.key, cert: tls.cert }, accept) : createServer(accept);
  // A failed TLS handshake ends that socket only.
  server.on('tlsClientError', (error: Error) => log(`TLS handshake failed: ${error.message}`));
  const bound = await listen(server, port);
  service = makeService(bound);
  return {
    port: bound,
    async stop() {
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      // With an error: rhea clears a connection's idle timers on its socket's 'error' or 'end', not on
      // 'close'; destroyed without one, each open connection kept its process alive for 8 minutes.
      for (const socket of sockets) socket.destroy(new Error('the emulator stopped'));
      await done;
    },
  };
}

/** Accepts a request, runs it (token checks may fetch the provider's keys), and sends the reply on the client's reply link. */
async function answer(
  context: EventContext,
  state: ConnectionState,
  service: Service,
  run: (request: Message) => Promise<Message>,
) {
  const request = context.message;
  context.delivery?.accept();
  if (!request) return;
  const response = await run(request);
  const link = state.replyLinks.get(String(request.reply_to ?? ''));
  if (link?.is_open()) link.send(response);
  else service.log(`no open reply link '${String(request.reply_to)}' for a request`);
}

/** Resolves once the endpoint answers an AMQP protocol header with its own (as every AMQP server must). */
export function probe(port: number, timeoutMs = 2000): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, LOOPBACK);
    const fail = (reason: string) => {
      socket.destroy();
      reject(new Error(`Event Hubs AMQP endpoint on port ${port}: ${reason}`));
    };
    socket.setTimeout(timeoutMs, () => fail('no answer'));
    socket.on('error', (error) => fail(error.message));
    socket.once('connect', () => socket.write(Buffer.from([0x41, 0x4d, 0x51, 0x50, 3, 1, 0, 0])));
    socket.once('data', (data) => {
      socket.destroy();
      if (data.subarray(0, 4).toString('latin1') === 'AMQP') resolve();
      else fail('not an AMQP answer');
    });
  });
}
