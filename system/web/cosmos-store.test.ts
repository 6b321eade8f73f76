/**
 * Variant B's task store on its own (the pages that use it need a signed-in user; variant-b.test.ts
 * drives them): TasksDB/Tasks through the vault secret DocumentDbConnection, read with the web app's
 * managed identity, in the function app's document shape; an unreachable store is a 503 text.
 */
import { CosmosClient } from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testDataDir, useManagedIdentityEnv } from '../../emulators/core/testing.ts';
import type { Stack } from '../../emulators/stack/launcher.ts';
import type { TaskStore } from './src/tasks.ts';
import { startStores } from './test-support.ts';

const data = testDataDir();
let stack: Stack;
let store: TaskStore;
let restore: () => void;

beforeAll(async () => {
  stack = await startStores(data.dir, ['identity', 'keyvault', 'cosmos']);
  const identity = stack.description.identities.webApp;
  restore = useManagedIdentityEnv(identity?.IDENTITY_ENDPOINT as string, identity?.IDENTITY_HEADER);
  process.env.KeyVaultUri = stack.description.connections.KeyVaultUri;
  process.env.KeyVaultDisableChallengeResourceVerification = 'true';
  // Imported once the settings are in place: the credential reads them when it is made.
  store = (await import('./src/cosmos-store.ts')).cosmosStore();
});
afterAll(async () => {
  restore?.();
  delete process.env.KeyVaultUri;
  delete process.env.KeyVaultDisableChallengeResourceVerification;
  await stack?.stop();
  data.remove();
});

const container = () =>
  new CosmosClient(stack.description.secrets.DocumentDbConnection as string)
    .database('TasksDB')
    .container('Tasks');

/**
 * Settles `work` with this process's timers run as soon as they are the only thing left to wait for: the
 * SDK's retries of an unreachable vault (its default policy: three, ~7 s of backoff in real time) are not
 * what the test checks, only that they end in the store's 503 text. Connections and the stack run as ever.
 */
async function withoutBackoff<T>(work: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    let settled = false;
    const result = work();
    // Marks the end without handling it: the caller awaits `result` itself.
    const mark = () => {
      settled = true;
    };
    result.then(mark, mark);
    while (!settled) {
      // A turn of the event loop first, so that I/O under way (a refused connection) is seen before time moves.
      await new Promise((resolve) => setImmediate(resolve));
      if (!settled && vi.getTimerCount() > 0) await vi.advanceTimersToNextTimerAsync();
    }
    return await result;
  } finally {
    vi.useRealTimers();
  }
}

describe('variant B task store', () => {
  it('an unreachable vault (the connection string not yet read) fails with the 503 text, then recovers', async () => {
    await stack.stopComponent('keyvault');
    try {
      await expect(withoutBackoff(() => store.list())).rejects.toMatchObject({
        publicText: 'The task store is unavailable. Try again later.',
        message: expect.stringMatching(/^the task store failed: /),
      });
    } finally {
      await stack.startComponent('keyvault');
    }
    expect(await store.list()).toEqual([]);
  });

  it('adds a task as the function app stores one (id, Title, Description, DueDate) and lists it camelCase', async () => {
    const task = await store.add({ title: 'Renew passport', description: null, dueDate: '2027-05-01' });
    expect(task.id).toMatch(/^[0-9a-f-]{36}$/);
    const { resource } = await container().item(task.id, task.id).read();
    expect(resource).toMatchObject({
      id: task.id,
      Title: 'Renew passport',
      Description: null,
      DueDate: '2027-05-01',
    });
    expect(Object.keys(resource as object).filter((key) => !key.startsWith('_'))).toEqual([
      'id',
      'Title',
      'Description',
      'DueDate',
    ]);
    expect(await store.list()).toEqual([task]);
  });

  it('lists documents written by others as they are stored (a ManageTask description stays encrypted)', async () => {
    await container().items.create({
      id: 'from-managetask',
      Title: 'Managed',
      Description: 'q83vEjRWeJA=',
      DueDate: null,
    });
    expect((await store.list()).find((t) => t.id === 'from-managetask')).toEqual({
      id: 'from-managetask',
      title: 'Managed',
      description: 'q83vEjRWeJA=',
      dueDate: null,
    });
  });

  it('an unreachable Cosmos DB fails with the 503 text, and the store works again once it is back', async () => {
    await stack.stopComponent('cosmos');
    try {
      await expect(store.list()).rejects.toMatchObject({
        publicText: 'The task store is unavailable. Try again later.',
        message: expect.stringMatching(/^the task store failed: /),
      });
    } finally {
      await stack.startComponent('cosmos');
    }
    // In memory: the restarted Cosmos DB starts empty (and creates TasksDB/Tasks from the topology).
    expect(await store.list()).toEqual([]);
  });
});
