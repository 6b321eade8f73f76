import { afterAll, beforeAll, expect, it } from 'vitest';
import { type EntraFixture, startCosmosWithIdentity } from './testing.ts';

// Its own file: MSAL caches managed-identity tokens process-wide, so this file speaks only as webApp.
let entra: EntraFixture;
beforeAll(async () => {
  entra = await startCosmosWithIdentity();
});
afterAll(() => entra.close());

it('refuses the webApp identity (no Cosmos role) with the RBAC 403', async () => {
  const client = await entra.clientAs('webApp');
  const principal = entra.cosmos.context.secrets.identities.webApp?.principalId;
  const error = await client
    .database('TasksDB')
    .container('Tasks')
    .item('x', 'x')
    .read()
    .catch((e) => e);
  expect(error.code).toBe(403);
  expect(error.body.code).toBe('Forbidden');
  expect(error.body.message.split('\r\n')[0]).toBe(
    `Request blocked by Auth taskstack-cosmos : Request is blocked because principal [${principal}] does not have required RBAC permissions to perform action [Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/items/read] on resource [/dbs/TasksDB/colls/Tasks/docs/x]. Learn more: https://aka.ms/cosmos-native-rbac.`,
  );
  expect(error.headers['x-ms-substatus']).toBe('5301');
});
