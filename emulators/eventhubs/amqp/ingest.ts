/**
 * Producer links: a client's sender attached to `<hub>` (the service picks the partition) or
 * `<hub>/Partitions/<id>`. Each transfer is one event or one batch; it is stored whole, then accepted,
 * or rejected with the service's error and nothing stored.
 */
import rhea, { type EventContext, type Message, type Receiver } from 'rhea';
import { decodeError, entityNotFound, messageTooLarge } from '../service/faults.ts';
import type { Partition } from '../service/partition.ts';
import { splitTransfer } from './codec.ts';
import {
  amqpError,
  type ConnectionState,
  type LinkHandler,
  localAttach,
  requireClaim,
  type Service,
} from './link.ts';

/** Message format of the SDKs' batches: data sections that are each a whole encoded message. */
const BATCH_FORMAT = 0x80013700;
const ADDRESS = /^([^/]+)(?:\/partitions\/([^/]*))?$/i;

export function attachProducer(receiver: Receiver, state: ConnectionState, service: Service): LinkHandler {
  const address = String(receiver.target?.address ?? '');
  const match = ADDRESS.exec(address);
  const hub = match && service.namespace.hub(match[1] as string);
  if (!match || !hub) throw entityNotFound(`${service.endpoint}/${address}`);
  const fixed: Partition | undefined = match[2] === undefined ? undefined : hub.partition(match[2]);
  requireClaim(state, service, address, 'Send');
  // The SDK sizes its batches by what the service announces here.
  localAttach(receiver).max_message_size = service.maxMessageSize;

  return {
    message(context: EventContext) {
      const delivery = context.delivery;
      if (!delivery) return;
      try {
        const format = (context as { format?: number }).format ?? 0;
        if (format !== 0 && format !== BATCH_FORMAT)
          throw decodeError(`The message format ${format} is not supported.`);
        const data =
          format === 0
            ? rhea.message.encode(context.message as Message)
            : (context.message as unknown as Buffer);
        if (data.length > service.maxMessageSize)
          throw messageTooLarge(delivery.id, data.length, service.maxMessageSize);
        const { partitionKey, events } = splitTransfer(data, format === BATCH_FORMAT);
        const partition = fixed ?? hub.assign(partitionKey);
        partition.append(events.map((message) => ({ message, partitionKey })));
        delivery.accept();
      } catch (error) {
        delivery.reject(amqpError(error, service, address));
      }
    },
  };
}
