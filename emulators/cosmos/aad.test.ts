import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EntraFixture, startCosmosWithIdentity } from './testing.ts';

let entra: EntraFixture;
beforeAll(async () => {
  entra = await startCosmosWithIdentity();
});
afterAll(() => entra.close());

describe('Entra ID (RBAC) authorization: the functionApp identity, Data Contributor', () => {
  it('finds TasksDB/Tasks created from the topology at start and works with items', async () => {
    const client = await entra.clientAs('functionApp');
    const container = client.database('TasksDB').container('Tasks');
    const created = await container.items.create({ id: 'aad-1', title: 'by token' });
    expect(created.statusCode).toBe(201);
    expect((await container.item('aad-1', 'aad-1').read()).resource?.title).toBe('by token');
    const { resources } = await container.items.query('SELECT * FROM c').fetchAll();
    expect(resources.map((r) => r.id)).toContain('aad-1');
    // createIfNotExists of what exists only reads: allowed.
    const { database } = await client.databases.createIfNotExists({ id: 'TasksDB' });
    expect(database.id).toBe('TasksDB');
    // What the topology does not declare, a role-based app cannot create (403, substatus 5300).
    const refused = await client.databases.createIfNotExists({ id: 'NotDeclared' }).catch((e) => e);
    expect(refused.code).toBe(403);
    expect(refused.headers['x-ms-substatus']).toBe('5300');
  });

  it('may not manage databases: Cosmos refuses control-plane requests to tokens, with its 403 text', async () => {
    const client = await entra.clientAs('functionApp');
    const error = await client.databases.create({ id: 'Other' }).catch((e) => e);
    expect(error.code).toBe(403);
    const [text, tail] = error.body.message.split('\r\n');
    expect(text).toBe(
      'Request blocked by Auth taskstack-cosmos : The given request [POST /dbs] cannot be authorized by AAD token in data plane. Learn more: https://aka.ms/cosmos-native-rbac.',
    );
    expect(tail).toMatch(/^ActivityId: [0-9a-f-]{36}, Microsoft\.Azure\.Documents\.Common\/2\.14\.0$/);
  });

  it('refuses a token that is not from the identity provider with 401', async () => {
    const client = entra.cosmos.client({
      key: undefined,
      tokenProvider: async () => 'type=aad&ver=1.0&sig=eyJhbGciOiJub25lIn0.eyJvaWQiOiJ4In0.',
    });
    const error = await client
      .database('TasksDB')
      .read()
      .catch((e) => e);
    expect(error.code).toBe(401);
    expect(error.body.code).toBe('Unauthorized');
  });
});
