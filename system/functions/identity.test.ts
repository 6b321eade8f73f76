/**
 * The function app's managed identity: Cosmos DB reached role-based (no key) when
 * DocumentDbConnection__accountEndpoint is set, and a vault that refuses the identity.
 */
import { CosmosClient } from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppStack, answer, freePort, startAppStack } from './test-support.ts';

const ENCRYPTION_KEY = 'identity-test-key-5c1e4a90b7d2f3e8';
const refuse = (app: AppStack) =>
  app.stack.action('keyvault', 'setAccessPolicy', { identity: 'functionApp', secrets: [] });
const grant = (app: AppStack) =>
  app.stack.action('keyvault', 'setAccessPolicy', { identity: 'functionApp', secrets: ['Get', 'List'] });

const post = (app: AppStack, body: unknown) =>
  fetch(app.url('managetask'), { method: 'POST', body: JSON.stringify(body) });

describe('role-based Cosmos DB access', () => {
  let app: AppStack;
  beforeAll(async () => {
    const cosmosPort = await freePort();
    app = await startAppStack({
      encryptionKey: ENCRYPTION_KEY,
      portOverrides: { cosmos: cosmosPort },
      settings: { DocumentDbConnection__accountEndpoint: `https://127.0.0.1:${cosmosPort}/` },
    });
    // A role may not create databases: TasksDB/Tasks are created with the key, as the deployment does.
    const cosmos = new CosmosClient(app.stack.description.connections.DocumentDbConnection ?? '');
    const { database } = await cosmos.databases.createIfNotExists({ id: 'TasksDB' });
    await database.containers.createIfNotExists({ id: 'Tasks', partitionKey: { paths: ['/id'] } });
    cosmos.dispose();
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('reads from Cosmos DB with the identity alone (the vault refuses it, no connection string is read)', async () => {
    await refuse(app);
    expect(await answer(await fetch(app.url('managetask', { taskId: 'unknown' })))).toEqual({
      status: 404,
      contentType: null,
      body: '',
    });
  });

  it('creates and reads tasks with the identity once the vault grants the EncryptionKey', async () => {
    await grant(app);
    const created = (await (await post(app, { Title: 'rbac', Description: 'role-based' })).json()) as {
      id: string;
    };
    const read = await (await fetch(app.url('managetask', { taskId: created.id }))).json();
    expect(read).toMatchObject({ id: created.id, Title: 'rbac', Description: 'role-based' });
  });
});

describe('a vault that refuses the identity', () => {
  let app: AppStack;
  beforeAll(async () => {
    app = await startAppStack({ encryptionKey: ENCRYPTION_KEY });
    await refuse(app);
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('gives POST and GET an empty 500 whose body and logs hold no secret value', async () => {
    const responses = [
      await answer(await post(app, { Title: 't', Description: 'd' })),
      await answer(await fetch(app.url('managetask', { taskId: 'any' }))),
    ];
    expect(responses).toEqual([
      { status: 500, contentType: null, body: '' },
      { status: 500, contentType: null, body: '' },
    ]);
    await app.waitForLog(
      (e) => e.function === 'ManageTask' && e.message.startsWith('ManageTask: reading the task failed:'),
    );
    const logs = app.allLogText();
    for (const secret of Object.values(app.stack.description.secrets)) expect(logs).not.toContain(secret);
    const accountKey = /AccountKey=([^;]+)/.exec(
      app.stack.description.secrets.DocumentDbConnection ?? '',
    )?.[1];
    expect(accountKey).toBeTruthy();
    expect(logs).not.toContain(accountKey);
  });

  it('recovers without a restart once access is granted (a failure is not cached)', async () => {
    await grant(app);
    expect((await post(app, { Title: 't', Description: 'd' })).status).toBe(200);
  });
});
