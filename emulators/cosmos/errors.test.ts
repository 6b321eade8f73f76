import {
  CosmosClient,
  type HTTPMethod,
  type ResourceType,
  setAuthorizationTokenHeaderUsingMasterKey,
} from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CosmosFixture, startCosmos } from './testing.ts';

let cosmos: CosmosFixture;

beforeAll(async () => {
  cosmos = await startCosmos({ inMemory: true });
  const { database } = await cosmos.client().databases.createIfNotExists({ id: 'TestDB' });
  await database.containers.createIfNotExists({ id: 'Tasks', partitionKey: { paths: ['/owner'] } });
});
afterAll(() => cosmos.close());

describe('authorization and bad input', () => {
  it('refuses a wrong key with 401 and the Cosmos body', async () => {
    const wrong = new CosmosClient({
      endpoint: cosmos.endpoint,
      key: Buffer.alloc(64, 7).toString('base64'),
      connectionPolicy: { enableEndpointDiscovery: false },
    });
    const error = await wrong
      .database('TestDB')
      .read()
      .catch((e) => e);
    wrong.dispose();
    expect(error.code).toBe(401);
    expect(error.body.code).toBe('Unauthorized');
    expect(error.body.message).toMatch(
      /^The input authorization token can't serve the request\. The wrong key is being used or the expected payload is not built as per the protocol\. For more info: https:\/\/aka\.ms\/cosmosdb-tsg-mac-signature\. Server used the following payload to sign: 'get\ndbs\ndbs\/TestDB\n[a-z]{3}, \d\d [a-z]{3} \d{4} [\d:]{8} gmt\n\n'\r\nActivityId: /,
    );
  });

  it('answers garbage, missing auth, unknown paths and wrong methods with Cosmos errors', async () => {
    const raw = await fetch(`${cosmos.endpoint}dbs`);
    expect(raw.status).toBe(401);
    expect((await raw.json()).message).toMatch(/^Required Header authorization is missing\./);

    // Signed as the SDK signs: resource type and link given here by hand for each address.
    const signed = async (
      method: string,
      path: string,
      type: string,
      link: string,
      body?: string,
      extra = {},
    ) => {
      const headers: Record<string, string> = { 'x-ms-date': new Date().toUTCString(), ...extra };
      await setAuthorizationTokenHeaderUsingMasterKey(
        method as HTTPMethod,
        link,
        type as ResourceType,
        headers,
        cosmos.context.secrets.cosmosKey,
      );
      return fetch(`${cosmos.endpoint}${path}`, { method, body, headers });
    };
    const docs = ['dbs/TestDB/colls/Tasks/docs', 'docs', 'dbs/TestDB/colls/Tasks'] as const;
    const garbage = await signed('POST', ...docs, '{not json', { 'content-type': 'application/json' });
    expect(garbage.status).toBe(400);
    expect(await garbage.json()).toMatchObject({
      code: 'BadRequest',
      message: expect.stringMatching(/^Message: \{"Errors":\["The request payload is invalid/),
    });

    const unknown = await signed('GET', 'nothing/here', 'nothing', 'nothing/here');
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).code).toBe('NotFound');

    const query = JSON.stringify({ query: 'SELECT * FROM c' });
    const plainJson = await signed('POST', ...docs, query, {
      'x-ms-documentdb-isquery': 'True',
      'content-type': 'application/json',
    });
    expect(plainJson.status).toBe(415);
    expect((await plainJson.json()).code).toBe('UnsupportedMediaType');

    const method = await signed('PATCH', 'dbs/TestDB', 'dbs', 'dbs/TestDB');
    expect(method.status).toBe(405);

    const noId = await signed('POST', ...docs, '{"owner":"x"}', { 'x-ms-documentdb-partitionkey': '["x"]' });
    expect(noId.status).toBe(400);
    expect((await noId.json()).message).toMatch(/required properties - 'id; ' - are missing/);
  });

  it('refuses a document over 2 MB with 413 RequestEntityTooLarge', async () => {
    const container = cosmos.client().database('TestDB').container('Tasks');
    const error = await container.items
      .create({ id: 'big', owner: 'ann', blob: 'x'.repeat(2 * 1024 * 1024) })
      .catch((e) => e);
    expect(error.code).toBe(413);
    expect(error.body.code).toBe('RequestEntityTooLarge');
    const oversized = await fetch(`${cosmos.endpoint}dbs`, { headers: { 'x-big': 'y'.repeat(70 * 1024) } });
    expect(oversized.status).toBe(400);
  });

  it('limits an item id to 1023 bytes of UTF-8, not 1023 characters, with Azure’s 400 text', async () => {
    const container = cosmos.client().database('TestDB').container('Tasks');
    for (const id of ['x'.repeat(1023), `${'é'.repeat(511)}x`])
      expect((await container.items.create({ id, owner: 'ann' })).statusCode).toBe(201);
    for (const id of ['x'.repeat(1024), 'é'.repeat(512)]) {
      const error = await container.items.create({ id, owner: 'ann' }).catch((e) => e);
      expect(error.code).toBe(400);
      expect(error.body.message.split('\r\n')[0]).toBe(
        `The input name '${id}' is invalid. Ensure to provide a unique non-empty string less than '1024' characters.`,
      );
    }
  });

  it('refuses an item ttl that is not -1 or a positive integer with 400, on every write, writing nothing', async () => {
    const container = cosmos.client().database('TestDB').container('Tasks');
    await container.items.create({ id: 'ttl', owner: 'ann', ttl: -1 });
    // The SDK types ttl as a number; the service is what refuses the others.
    const writes = [
      (ttl: number) => container.items.create({ id: 'ttl2', owner: 'ann', ttl }),
      (ttl: number) => container.items.upsert({ id: 'ttl', owner: 'ann', ttl }),
      (ttl: number) => container.item('ttl', 'ann').replace({ id: 'ttl', owner: 'ann', ttl }),
      (ttl: number) => container.item('ttl', 'ann').patch([{ op: 'set', path: '/ttl', value: ttl }]),
    ];
    for (const [ttl, shown] of [
      [0, '0'],
      [-10, '-10'],
      [null, 'null'],
      [1.5, '1.5'],
      [2 ** 31, '2147483648'],
    ] as const) {
      for (const write of writes) {
        const error = await write(ttl as number).catch((e) => e);
        expect(error.code, `${shown} ${write}`).toBe(400);
        expect(error.body.message.split('\r\n')[0]).toBe(
          `Message: {"Errors":["The input ttl '${shown}' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."]}`,
        );
      }
    }
    expect((await container.item('ttl2', 'ann').read()).statusCode).toBe(404);
    expect((await container.item('ttl', 'ann').read()).resource.ttl).toBe(-1);
    const kept = await container.items.upsert({ id: 'ttl', owner: 'ann', ttl: 2147483647 });
    expect(kept.resource?.ttl).toBe(2147483647);
  });
});

it('reports healthy once listening', async () => {
  await expect(cosmos.running.health()).resolves.toBeUndefined();
});
