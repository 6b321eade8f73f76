/**
 * The storage rows of the Errors table that need a broken StorageConnection setting, and CreateTask's
 * failed blob write (README: an empty 500).
 */
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppStack, answer, startAppStack, TEXT } from './test-support.ts';

const upload = (app: AppStack) => {
  const body = new FormData();
  body.append('taskId', 't1');
  body.append('file', new Blob(['x']), 'a.txt');
  return fetch(app.url('uploadattachment'), { method: 'POST', body });
};
const metadata = (app: AppStack) => fetch(app.url('getattachment', { taskId: 't1', fileName: 'a.txt' }));

describe('StorageConnection missing or empty', () => {
  let app: AppStack;
  beforeAll(async () => {
    app = await startAppStack({
      components: ['identity', 'blob', 'functions'],
      settings: { StorageConnection: '' },
    });
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('upload and metadata answer 500 with an empty body', async () => {
    for (const response of [await upload(app), await metadata(app)]) {
      expect(await answer(response)).toEqual({ status: 500, contentType: null, body: '' });
    }
  });
});

describe('any other storage failure', () => {
  // A value the storage client cannot use: it fails at once, without retries.
  const UNUSABLE = 'not a connection string';
  /** The storage client's own message for that value: what the answers must carry after their prefix. */
  const failureMessage = () => {
    try {
      BlobServiceClient.fromConnectionString(UNUSABLE);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('the storage client accepted the connection string');
  };
  let app: AppStack;
  beforeAll(async () => {
    app = await startAppStack({
      components: ['identity', 'blob', 'functions'],
      settings: { StorageConnection: UNUSABLE },
    });
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('upload answers 500 with "Error uploading file: " and the failure message', async () => {
    const { status, contentType, body } = await answer(await upload(app));
    expect({ status, contentType }).toEqual({ status: 500, contentType: TEXT });
    expect(body).toBe(`Error uploading file: ${failureMessage()}`);
  });

  it('metadata answers 500 with "Error retrieving file metadata: " and the failure message', async () => {
    const { status, contentType, body } = await answer(await metadata(app));
    expect({ status, contentType }).toEqual({ status: 500, contentType: TEXT });
    expect(body).toBe(`Error retrieving file metadata: ${failureMessage()}`);
  });
});

describe('CreateTask when its blob cannot be written', () => {
  let app: AppStack;
  beforeAll(async () => {
    app = await startAppStack({ components: ['identity', 'blob', 'functions'] });
  });
  afterAll(async () => {
    await app?.stop();
  });

  const createTask = (Title: string) =>
    fetch(app.url('createtask'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ Title }),
    });

  it('answers 500 with an empty body, and the log says why', async () => {
    // The first task creates the container, which the app then no longer checks for; removing it
    // makes the next write fail.
    expect((await createTask('before')).status).toBe(200);
    const storage = BlobServiceClient.fromConnectionString(
      app.stack.description.connections.AzureWebJobsStorage ?? '',
    );
    await storage.getContainerClient('tasks').delete();
    expect(await answer(await createTask('after'))).toEqual({ status: 500, contentType: null, body: '' });
    await app.waitForLog((entry) => entry.message.startsWith('CreateTask: writing the task blob failed: '));
  });

  it('was told of no vault, the stack running none: its Key Vault reference was refused at once, not waited for', () => {
    expect(app.allLogText()).toContain(
      "Key Vault reference in app setting DocumentDbConnection was not resolved: the vault taskstack is not one of this stack's (none)",
    );
  });
});
