/**
 * The wire below the SDK: garbage, clients that vanish mid-link, links without a token, malformed
 * batches, plain (format 0) messages from other AMQP clients. The server must answer with AMQP errors
 * and keep serving everyone else.
 */
import { createHmac } from 'node:crypto';
import { connect as tcpConnect } from 'node:net';
import { EventHubProducerClient, earliestEventPosition } from '@azure/event-hubs';
import rhea, { type Connection, type EventContext } from 'rhea';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionForKey } from './service/partition-key.ts';
import { HUB, record, type Started, startEventHubs, waitFor } from './test-support.ts';

let hub: Started;
let port: number;
let endpoint: string;

beforeAll(async () => {
  hub = await startEventHubs({ inMemory: true });
  port = Number(new URL(hub.running.endpoints.amqp as string).port);
  endpoint = `sb://127.0.0.1:${port}`;
});

afterAll(async () => {
  await hub?.running.stop();
  hub?.remove();
});

/** Sends raw bytes on a fresh socket; resolves when the server has closed it. */
function sendRaw(bytes: Buffer, endEarly = false): Promise<void> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1', () => {
      socket.write(bytes);
      if (endEarly) socket.destroy();
    });
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.on('close', () => resolve());
  });
}

async function stillServes() {
  await hub.running.health();
  const producer = new EventHubProducerClient(hub.connectionString, HUB);
  try {
    expect((await producer.getEventHubProperties()).partitionIds).toEqual(['0', '1']);
  } finally {
    await producer.close();
  }
}

function once(target: { once(event: string, fn: (context: EventContext) => void): void }, event: string) {
  return new Promise<EventContext>((resolve) => target.once(event, resolve));
}

function sasToken(audience: string): string {
  const sr = encodeURIComponent(audience);
  const se = Math.floor(Date.now() / 1000) + 3600;
  const sig = encodeURIComponent(
    createHmac('sha256', hub.context.secrets.eventHubsKey).update(`${sr}\n${se}`).digest('base64'),
  );
  return `SharedAccessSignature sr=${sr}&sig=${sig}&se=${se}&skn=RootManageSharedAccessKey`;
}

const condition = (delivery: EventContext['delivery']) =>
  (delivery?.remote_state as { error?: { condition?: string } } | undefined)?.error?.condition;

/** A bare rhea client connection (SASL ANONYMOUS), optionally authorised with a put-token for `audience`. */
async function rawClient(audience?: string): Promise<Connection> {
  const connection = rhea.create_container().connect({ host: '127.0.0.1', port, reconnect: false });
  connection.on('error', () => {});
  connection.on('disconnected', () => {});
  await once(connection, 'connection_open');
  if (audience) {
    const replies = connection.open_receiver({
      source: { address: '$cbs' },
      name: 'cbs-reply',
      target: { address: 'cbs-reply' },
    });
    const requests = connection.open_sender({ target: { address: '$cbs' } });
    await once(requests, 'sendable');
    requests.send({
      body: sasToken(audience),
      message_id: 'token-1',
      reply_to: 'cbs-reply',
      application_properties: {
        operation: 'put-token',
        name: audience,
        type: 'servicebus.windows.net:sastoken',
      },
    });
    const { message } = await once(replies, 'message');
    expect(message?.application_properties?.['status-code']).toBe(202);
  }
  return connection;
}

describe('Event Hubs AMQP robustness', () => {
  it('survives garbage, a bad frame after a good header, and sockets dropped mid-frame', async () => {
    await sendRaw(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    await sendRaw(
      Buffer.concat([
        Buffer.from('AMQP\x00\x01\x00\x00', 'latin1'),
        Buffer.from([0, 0, 0, 12, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
      ]),
    );
    await sendRaw(
      Buffer.concat([Buffer.from('AMQP\x03\x01\x00\x00', 'latin1'), Buffer.from([0, 0, 0, 200, 2, 1, 0, 0])]),
      true,
    );
    await stillServes();
  });

  it('refuses a link whose connection has put no token: unauthorized-access', async () => {
    const connection = await rawClient();
    try {
      const receiver = connection.open_receiver({
        source: { address: `${HUB}/ConsumerGroups/$default/Partitions/0` },
      });
      const { receiver: closed } = await once(receiver, 'receiver_close');
      const error = closed?.error as { condition?: string; description?: string } | undefined;
      expect(error?.condition).toBe('amqp:unauthorized-access');
      expect(String(error?.description)).toMatch(/^Unauthorized access\. 'Listen' claim\(s\) are required/);
    } finally {
      connection.close();
    }
  });

  it('releases the partition of an owner whose client vanished mid-link', async () => {
    const connection = await rawClient(`${endpoint}/${HUB}`);
    const owner = connection.open_receiver({
      source: {
        address: `${HUB}/ConsumerGroups/$default/Partitions/1`,
        filter: {
          'apache.org:selector-filter:string': rhea.types.wrap_described(
            "amqp.annotation.x-opt-offset > '-1'",
            0x468c00000004,
          ),
        },
      },
      properties: { 'com.microsoft:epoch': rhea.types.wrap_long(5) },
    });
    await once(owner, 'receiver_open');
    (connection as unknown as { socket: { destroy(): void } }).socket.destroy();

    const rec = record(hub.connectionString, '1', earliestEventPosition);
    try {
      await waitFor(rec.ready, 'a non-epoch receiver once the owner is gone');
      expect(rec.errors).toEqual([]);
    } finally {
      await rec.close();
    }
  });

  it('rejects a malformed batch with decode-error and stores a plain (format 0) message as one event', async () => {
    const connection = await rawClient(`${endpoint}/${HUB}`);
    try {
      const sender = connection.open_sender({ target: { address: HUB } });
      await once(sender, 'sendable');
      const notData = rhea.message.encode({ body: 'not data sections' });
      sender.send(notData, undefined, 0x80013700);
      const { delivery } = await once(sender, 'rejected');
      expect(condition(delivery)).toBe('amqp:decode-error');

      sender.send(Buffer.from([0x00, 0x53, 0x75, 0xb0, 0xff, 0, 0, 0]), undefined, 0x80013700);
      const truncated = await once(sender, 'rejected');
      expect(condition(truncated.delivery)).toBe('amqp:decode-error');

      const key = 'plain-client';
      const partition = String(partitionForKey(key, 2));
      sender.send({
        body: 'from a plain AMQP client',
        application_properties: { source: 'rhea' },
        message_annotations: { 'x-opt-partition-key': key },
      });
      await once(sender, 'accepted');

      const rec = record(hub.connectionString, partition, earliestEventPosition);
      try {
        await waitFor(() => rec.events.length === 1, 'the plain message');
        expect(rec.events[0]).toMatchObject({
          body: 'from a plain AMQP client',
          properties: { source: 'rhea' },
          partitionKey: key,
        });
      } finally {
        await rec.close();
      }
    } finally {
      connection.close();
    }
    await stillServes();
  });
});
