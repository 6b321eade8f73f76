/**
 * Variant B: tasks in Cosmos DB TasksDB/Tasks, reached as the function app reaches them (the same
 * module: the connection string from vault secret DocumentDbConnection, read with the app's managed
 * identity). Documents have the function app's shape — id, Title, Description, DueDate — so the
 * change feed's DocumentCreated event carries a web task exactly as it carries one from ManageTask.
 * The web app does not encrypt: a ManageTask document shows its Description as stored (encrypted).
 */
import { randomUUID } from 'node:crypto';
import { UnavailableError } from './errors.ts';
import type { Task, TaskStore } from './tasks.ts';

interface TaskDocument {
  id: string;
  Title?: unknown;
  Description?: unknown;
  DueDate?: unknown;
}

export const STORE_UNAVAILABLE = 'The task store is unavailable. Try again later.';

/**
 * The container, its SDKs (Cosmos DB's, and the identity SDK that reads the vault) imported at the first
 * use: B's start and its health check never use the store, and the two chunks cost its start ~100 ms of CPU.
 */
const tasksContainer = async () => (await import('../../functions/src/lib/cosmos.ts')).tasksContainer();

const text = (value: unknown) => (typeof value === 'string' ? value : null);

async function reach<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    // The request answers 503 and the app serves on; the reason goes to the log only.
    throw new UnavailableError(STORE_UNAVAILABLE, `the task store failed: ${(error as Error).message}`);
  }
}

export function cosmosStore(): TaskStore {
  return {
    list: () =>
      reach(async () => {
        const container = await tasksContainer();
        const { resources } = await container.items.query<TaskDocument>('SELECT * FROM c').fetchAll();
        return resources.map(
          (doc): Task => ({
            id: doc.id,
            title: text(doc.Title) ?? '',
            description: text(doc.Description),
            dueDate: text(doc.DueDate),
          }),
        );
      }),
    add: (input) =>
      reach(async () => {
        const id = randomUUID();
        const container = await tasksContainer();
        await container.items.create({
          id,
          Title: input.title,
          Description: input.description,
          DueDate: input.dueDate,
        });
        return { id, ...input };
      }),
  };
}
