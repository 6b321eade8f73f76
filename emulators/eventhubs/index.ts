/**
 * Event Hubs emulator: the namespace of `topology.eventHubs` over AMQP 1.0, for the official SDKs with a
 * `UseDevelopmentEmulator=true` connection string (plain AMQP, SASL ANONYMOUS, SAS tokens over $cbs),
 * and over AMQPS for SDKs given the namespace `127.0.0.1:<tlsPort>` and a token credential (Entra ID
 * tokens from the identity emulator, authorized by the topology's role assignments, or SAS).
 */
import { z } from 'zod';
import { defineEmulator } from '../core/emulator.ts';
import { LOOPBACK } from '../core/http.ts';
import { type AmqpServer, probe, startAmqpServer } from './amqp/server.ts';
import { entraVerifier } from './service/entra.ts';
import { EventHubsNamespace } from './service/namespace.ts';
import { tierLimits } from './service/tiers.ts';

/** The namespace's shared access policy, as Azure creates it. */
const KEY_NAME = 'RootManageSharedAccessKey';

export default defineEmulator({
  name: 'eventhubs',
  options: z.object({
    port: z.number().int().min(0).max(65535).default(5672),
    /** The AMQPS listener's port (Azure's is 5671); 0 takes a free one. */
    tlsPort: z.number().int().min(0).max(65535).default(0),
    /** The identity emulator's issuer and key set; without them Entra ID tokens are refused. */
    issuer: z.string().url().optional(),
    jwksUri: z.string().url().optional(),
  }),
  async start(options, context) {
    const { sku, hubs } = context.topology.eventHubs;
    const { maxMessageSize } = tierLimits(sku, hubs);
    const namespace = new EventHubsNamespace(hubs, context.stateDir, context.clock);
    const rule = { name: KEY_NAME, key: context.secrets.eventHubsKey };
    const { issuer, jwksUri } = options;
    const provider = issuer && jwksUri ? { issuer, jwksUri } : undefined;
    const verifyJwt = entraVerifier(provider, context.topology, context.secrets);
    // Each listener names resources by its own address, as clients' token audiences do.
    const service = (port: number) => ({
      namespace,
      rule,
      verifyJwt,
      clock: context.clock,
      log: context.log,
      maxMessageSize,
      endpoint: `sb://${LOOPBACK}:${port}`,
    });
    const servers: AmqpServer[] = [];
    try {
      servers.push(await startAmqpServer(options.port, service));
      servers.push(await startAmqpServer(options.tlsPort, service, context.tls));
    } catch (error) {
      await Promise.all(servers.map((server) => server.stop()));
      namespace.close();
      throw error;
    }
    const [plain, secure] = servers as [AmqpServer, AmqpServer];
    context.log(
      `AMQP on ${LOOPBACK}:${plain.port}, AMQPS on ${LOOPBACK}:${secure.port}, hubs: ${hubs.map((h) => h.name).join(', ')}`,
    );
    return {
      endpoints: {
        amqp: `amqp://${LOOPBACK}:${plain.port}`,
        amqps: `amqps://${LOOPBACK}:${secure.port}`,
        connectionString: `Endpoint=sb://${LOOPBACK}:${plain.port};SharedAccessKeyName=${KEY_NAME};SharedAccessKey=${rule.key};UseDevelopmentEmulator=true`,
        // For identity-based connections (`<Name>__fullyQualifiedNamespace`): the SDK speaks AMQPS to it.
        fullyQualifiedNamespace: `${LOOPBACK}:${secure.port}`,
      },
      health: () => probe(plain.port),
      async stop() {
        await Promise.all(servers.map((server) => server.stop()));
        namespace.close();
      },
    };
  },
});
