/**
 * Consumer links: a client's receiver attached to `<hub>/ConsumerGroups/<group>/Partitions/<id>` with a
 * selector filter giving the start position. Events go out pre-settled, as fast as the client's credit
 * allows, and new events follow as they are appended.
 */
import type { Sender } from 'rhea';
import { entityNotFound } from '../service/faults.ts';
import { parseSelector, startSequenceNumber } from '../service/position.ts';
import { deliveryBytes } from './codec.ts';
import {
  amqpError,
  type ConnectionState,
  type LinkHandler,
  localAttach,
  requireClaim,
  type Service,
} from './link.ts';

const ADDRESS = /^([^/]+)\/consumergroups\/([^/]+)\/partitions\/([^/]*)$/i;
const SELECTOR_FILTER = 'apache.org:selector-filter:string';
const RUNTIME_METRIC = 'com.microsoft:enable-receiver-runtime-metric';
const SETTLED = 1;

function selector(sender: Sender): string | undefined {
  const filter = (sender.source?.filter as Record<string, unknown> | undefined)?.[SELECTOR_FILTER];
  const value =
    typeof filter === 'object' && filter !== null ? (filter as { value?: unknown }).value : filter;
  return value === undefined ? undefined : String(value);
}

function capabilities(sender: Sender): string[] {
  const desired = sender.desired_capabilities;
  return desired === undefined ? [] : ([] as string[]).concat(desired).map(String);
}

export function attachConsumer(sender: Sender, state: ConnectionState, service: Service): LinkHandler {
  const address = String(sender.source?.address ?? '');
  const match = ADDRESS.exec(address);
  const [, hubName, group, partitionId] = match ?? [];
  const hub = hubName === undefined ? undefined : service.namespace.hub(hubName);
  if (!hub || group === undefined || partitionId === undefined)
    throw entityNotFound(`${service.endpoint}/${address}`);
  if (!hub.hasConsumerGroup(group))
    throw entityNotFound(`${service.endpoint}/${hub.name}/ConsumerGroups/${group}`);
  const partition = hub.partition(partitionId);
  requireClaim(state, service, address, 'Listen');
  let cursor = startSequenceNumber(partition, parseSelector(selector(sender)));

  const runtimeMetric = capabilities(sender).includes(RUNTIME_METRIC);
  const attach = localAttach(sender);
  if (runtimeMetric) attach.offered_capabilities = RUNTIME_METRIC;
  attach.snd_settle_mode = SETTLED;

  const pump = () => {
    while (sender.sendable() && cursor < partition.endSequenceNumber) {
      cursor = Math.max(cursor, partition.beginSequenceNumber);
      const event = partition.event(cursor);
      if (!event) break;
      const p = runtimeMetric ? partition.properties() : undefined;
      const runtime = p && {
        lastSequenceNumber: p.lastEnqueuedSequenceNumber,
        lastOffset: p.lastEnqueuedOffset,
        lastEnqueuedTime: p.lastEnqueuedTime,
        now: service.clock.now(),
      };
      sender.send(deliveryBytes(event, runtime), undefined, 0);
      cursor++;
    }
  };
  // Appends happen while another connection's frames are processed: deliver on a later turn so a
  // failure here can never surface on the producer's connection.
  let scheduled = false;
  const onAppend = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      if (sender.is_open()) guarded(pump);
    });
  };
  const guarded = (fn: () => void) => {
    try {
      fn();
    } catch (error) {
      sender.close(amqpError(error, service, address));
    }
  };

  const owner = sender.properties?.['com.microsoft:epoch'];
  const release = hub.addReader(group, partition.id, {
    name: String(sender.properties?.['com.microsoft:receiver-name'] ?? 'nil'),
    ownerLevel: typeof owner === 'number' ? owner : undefined,
    disconnect: (fault) => sender.close(amqpError(fault, service, address)),
  });
  partition.on('append', onAppend);
  return {
    sendable: () => guarded(pump),
    closed() {
      release();
      partition.off('append', onAppend);
    },
  };
}
