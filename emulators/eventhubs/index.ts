/**
 * Event Hubs emulator: the namespace of `topology.eventHubs` over AMQP 1.0, for the official SDKs with a
 * `UseDevelopmentEmulator=true` connection string (plain AMQP, SASL ANONYMOUS, SAS tokens over $cbs).
 */
import { z } from 'zod';
import { defineEmulator } from '../core/emulator.ts';
import { LOOPBACK } from '../core/http.ts';
import { probe, startAmqpServer } from './amqp/server.ts';
import { EventHubsNamespace } from './service/namespace.ts';

/** Largest event or batch a link accepts, by namespace tier. */
const MAX_MESSAGE_SIZE: Record<string, number> = {
  Basic: 256 * 1024,
  Standard: 1024 * 1024,
  Premium: 1024 * 1024,
  Dedicated: 1024 * 1024,
};
/** The namespace's shared access policy, as Azure creates it. */
const KEY_NAME = 'RootManageSharedAccessKey';

export default defineEmulator({
  name: 'eventhubs',
  options: z.object({ port: z.number().int().min(0).max(65535).default(5672) }),
  async start(options, context) {
    const { sku, hubs } = context.topology.eventHubs;
    const maxMessageSize = MAX_MESSAGE_SIZE[sku];
    if (maxMessageSize === undefined) throw new Error(`unknown Event Hubs tier '${sku}'`);
    const namespace = new EventHubsNamespace(hubs, context.stateDir, context.clock);
    const rule = { name: KEY_NAME, key: context.secrets.eventHubsKey };
    const server = await startAmqpServer(options.port, (port) => ({
      namespace,
      rule,
      clock: context.clock,
      log: context.log,
      maxMessageSize,
      endpoint: `sb://${LOOPBACK}:${port}`,
    })).catch((error: unknown) => {
      namespace.close();
      throw error;
    });
    context.log(`AMQP on ${LOOPBACK}:${server.port}, hubs: ${hubs.map((h) => h.name).join(', ')}`);
    return {
      endpoints: {
        amqp: `amqp://${LOOPBACK}:${server.port}`,
        connectionString: `Endpoint=sb://${LOOPBACK}:${server.port};SharedAccessKeyName=${KEY_NAME};SharedAccessKey=${rule.key};UseDevelopmentEmulator=true`,
      },
      health: () => probe(server.port),
      async stop() {
        await server.stop();
        namespace.close();
      },
    };
  },
});
