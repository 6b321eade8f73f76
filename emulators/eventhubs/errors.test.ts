/** What clients get for bad input: the service's own AMQP errors, as the SDK surfaces them. */
import { createHmac } from 'node:crypto';
import { EventHubProducerClient, earliestEventPosition, type MessagingError } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUB, record, type Started, startEventHubs, waitFor } from './test-support.ts';

let hub: Started;
const noRetry = { retryOptions: { maxRetries: 0, timeoutInMs: 5000 } };

beforeAll(async () => {
  hub = await startEventHubs({ inMemory: true });
});

afterAll(async () => {
  await hub?.running.stop();
  hub?.remove();
});

async function failure(work: () => Promise<unknown>): Promise<MessagingError> {
  const error = await work().then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!error) throw new Error('expected the call to fail');
  return error as MessagingError;
}

async function withProducer<T>(
  work: (p: EventHubProducerClient) => Promise<T>,
  connectionString = hub.connectionString,
  hubName = HUB,
) {
  const producer = new EventHubProducerClient(connectionString, hubName, noRetry);
  try {
    return await work(producer);
  } finally {
    await producer.close();
  }
}

describe('Event Hubs errors', () => {
  it('unknown hub: entity not found, for management and for sends', async () => {
    const read = await failure(() => withProducer((p) => p.getEventHubProperties(), undefined, 'nosuchhub'));
    expect(read.code).toBe('MessagingEntityNotFoundError');
    expect(read.message).toMatch(
      /^The messaging entity 'sb:\/\/127\.0\.0\.1:\d+\/nosuchhub' could not be found\./,
    );

    const send = await failure(() =>
      withProducer((p) => p.sendBatch([{ body: 'x' }]), undefined, 'nosuchhub'),
    );
    expect(send.code).toBe('MessagingEntityNotFoundError');
  });

  it('bad partition id: argument out of range, for management and for sends', async () => {
    const read = await failure(() => withProducer((p) => p.getPartitionProperties('5')));
    expect(read.code).toBe('ArgumentOutOfRangeError');
    expect(read.message).toMatch(
      /^The specified partition is invalid for an EventHub partition sender or receiver\. It should be between 0 and 1\./,
    );
    expect((await failure(() => withProducer((p) => p.getPartitionProperties('boo')))).code).toBe(
      'ArgumentOutOfRangeError',
    );

    const send = await failure(() => withProducer((p) => p.sendBatch([{ body: 'x' }], { partitionId: '7' })));
    expect(send.code).toBe('ArgumentOutOfRangeError');
  });

  it('wrong key: the put-token is refused with 401 and nothing is sent', async () => {
    const wrongKey = hub.connectionString.replace(
      /SharedAccessKey=[^;]+/,
      `SharedAccessKey=${Buffer.alloc(32, 7).toString('base64')}`,
    );
    const read = await failure(() => withProducer((p) => p.getEventHubProperties(), wrongKey));
    expect(read.code).toBe('UnauthorizedError');
    expect(read.message).toMatch(/^InvalidSignature: The token has an invalid signature\./);

    const before = await withProducer((p) => p.getPartitionProperties('0'));
    const send = await failure(() =>
      withProducer((p) => p.sendBatch([{ body: 'x' }], { partitionId: '0' }), wrongKey),
    );
    expect(send.code).toBe('UnauthorizedError');
    expect(await withProducer((p) => p.getPartitionProperties('0'))).toEqual(before);

    const wrongName = hub.connectionString.replace('RootManageSharedAccessKey', 'SendOnly');
    expect((await failure(() => withProducer((p) => p.getEventHubProperties(), wrongName))).code).toBe(
      'UnauthorizedError',
    );
  });

  it('message too large for the Basic tier (256 KB): message-size-exceeded, nothing stored', async () => {
    const before = await withProducer((p) => p.getPartitionProperties('1'));
    const error = await failure(() =>
      withProducer((p) => p.sendBatch([{ body: Buffer.alloc(300 * 1024, 1) }], { partitionId: '1' })),
    );
    expect(error.code).toBe('MessageTooLargeError');
    expect(error.message).toMatch(/exceeds the limit \(262144 bytes\) currently allowed on the link\./);
    expect(await withProducer((p) => p.getPartitionProperties('1'))).toEqual(before);
    // The SDK sizes batches by the link's announced limit.
    const batch = await withProducer((p) => p.createBatch());
    expect(batch.maxSizeInBytes).toBe(262144);
  });

  it('a consumer group other than $default does not exist on Basic: entity not found', async () => {
    const rec = record(hub.connectionString, '0', earliestEventPosition, { consumerGroup: 'analytics' });
    try {
      await waitFor(() => rec.errors.length > 0, 'the receiver error');
      const error = rec.errors[0] as MessagingError;
      expect(error.code).toBe('MessagingEntityNotFoundError');
      expect(error.message).toMatch(
        /^The messaging entity 'sb:\/\/127\.0\.0\.1:\d+\/taskevents\/ConsumerGroups\/analytics' could not be found\./,
      );
    } finally {
      await rec.close();
    }
    // Consumer group names are case-insensitive: `$Default` is the default group.
    const upper = record(hub.connectionString, '0', earliestEventPosition, { consumerGroup: '$Default' });
    try {
      await waitFor(upper.ready, 'the $Default receiver');
      expect(upper.errors).toEqual([]);
    } finally {
      await upper.close();
    }
  });

  it('owner level: a higher one takes the partition, lower or none is refused while it holds it', async () => {
    await withProducer((p) => p.sendBatch([{ body: 'e1' }], { partitionId: '0' }));
    const first = record(hub.connectionString, '0', earliestEventPosition, { ownerLevel: 1 });
    let second: ReturnType<typeof record> | undefined;
    let third: ReturnType<typeof record> | undefined;
    try {
      await waitFor(() => first.events.length > 0, 'the first owner to receive');
      second = record(hub.connectionString, '0', earliestEventPosition, { ownerLevel: 2 });
      await waitFor(() => first.errors.length > 0, 'the first owner to be disconnected');
      expect((first.errors[0] as MessagingError).code).toBe('ReceiverDisconnectedError');
      expect(first.errors[0]?.message).toMatch(/higher epoch of '2' is created/);
      await waitFor(() => (second?.events.length ?? 0) > 0, 'the second owner to receive');
      expect(second.errors).toEqual([]);

      third = record(hub.connectionString, '0', earliestEventPosition);
      await waitFor(() => (third?.errors.length ?? 0) > 0, 'the non-epoch receiver to be refused');
      expect((third.errors[0] as MessagingError).code).toBe('ReceiverDisconnectedError');
      expect(third.errors[0]?.message).toMatch(/non-epoch receiver is not allowed/);
      expect(third.events).toEqual([]);
    } finally {
      await Promise.all([first.close(), second?.close(), third?.close()]);
    }
  });

  it('checks tokens given as a shared access signature: expiry, audience, signature', async () => {
    const endpoint = hub.connectionString.match(/^Endpoint=(sb:\/\/[^;]+)/)?.[1] as string;
    const key = hub.context.secrets.eventHubsKey;
    const sas = (uri: string, expiry: number, signingKey = key) => {
      const sr = encodeURIComponent(uri);
      const sig = encodeURIComponent(
        createHmac('sha256', signingKey).update(`${sr}\n${expiry}`).digest('base64'),
      );
      return `Endpoint=${endpoint};SharedAccessSignature=SharedAccessSignature sr=${sr}&sig=${sig}&se=${expiry}&skn=RootManageSharedAccessKey;UseDevelopmentEmulator=true`;
    };
    // Clients sign with their own clock (real time).
    const inAnHour = Math.floor(Date.now() / 1000) + 3600;

    // A namespace-wide token grants every hub.
    expect((await withProducer((p) => p.getEventHubProperties(), sas(`${endpoint}/`, inAnHour))).name).toBe(
      HUB,
    );

    const expired = await failure(() =>
      withProducer((p) => p.getEventHubProperties(), sas(`${endpoint}/${HUB}`, inAnHour - 3700)),
    );
    expect(expired.code).toBe('UnauthorizedError');
    expect(expired.message).toMatch(/^ExpiredToken: The token is expired\./);

    const otherHub = await failure(() =>
      withProducer((p) => p.getEventHubProperties(), sas(`${endpoint}/otherhub`, inAnHour)),
    );
    expect(otherHub.code).toBe('UnauthorizedError');
    expect(otherHub.message).toMatch(/^InvalidAudience: /);

    const forged = await failure(() =>
      withProducer((p) => p.getEventHubProperties(), sas(`${endpoint}/${HUB}`, inAnHour, 'not the key')),
    );
    expect(forged.message).toMatch(/^InvalidSignature: /);
  });

  it("keeps accepting the clients' own tokens after the stack clock moves forward by days", async () => {
    hub.context.clock.advance(3 * 86_400_000);
    expect((await withProducer((p) => p.getEventHubProperties())).name).toBe(HUB);
  });
});
