/**
 * The message pacts verified against the real producers' code: the function app's documentCreatedEvents
 * (what PublishDocumentCreated publishes for a document of TasksDB/Tasks, Description encrypted as
 * ManageTask stores it) and web app A's task message (a task checked and stored as Create does, then
 * taskMessage, the body the app sends to taskevents).
 */
import { randomUUID } from 'node:crypto';
import { MessageProviderPact } from '@pact-foundation/pact';
import { describe, it } from 'vitest';
import { CONTAINER, DATABASE } from '../system/functions/src/lib/cosmos.ts';
import { encrypt, keyFromSecret } from '../system/functions/src/lib/encryption.ts';
import { documentCreatedEvents } from '../system/functions/src/lib/events.ts';
import { taskMessage } from '../system/web/src/events.ts';
import { checkForm, memoryStore } from '../system/web/src/tasks.ts';
import {
  DOCUMENT_CREATED_CONSUMER,
  DOCUMENT_CREATED_PRODUCER,
  pactFile,
  TASK_MESSAGE_CONSUMER,
  TASK_MESSAGE_PRODUCER,
} from './pacts.ts';

describe('the producers honour their consumers’ message pacts', () => {
  it(`${DOCUMENT_CREATED_PRODUCER}: the DocumentCreated event`, async () => {
    const key = keyFromSecret('message-pact-key');
    const document = {
      id: randomUUID(),
      Title: 'Pay rent',
      Description: encrypt('by Friday', key),
      DueDate: '2030-01-31',
    };
    await new MessageProviderPact({
      provider: DOCUMENT_CREATED_PRODUCER,
      pactUrls: [pactFile(DOCUMENT_CREATED_CONSUMER, DOCUMENT_CREATED_PRODUCER)],
      messageProviders: {
        'a DocumentCreated event for a created task': () =>
          documentCreatedEvents([document], DATABASE, CONTAINER, new Date())[0],
      },
      logLevel: 'warn',
    }).verify();
  });

  it(`${TASK_MESSAGE_PRODUCER}: the task message on taskevents`, async () => {
    await new MessageProviderPact({
      provider: TASK_MESSAGE_PRODUCER,
      pactUrls: [pactFile(TASK_MESSAGE_CONSUMER, TASK_MESSAGE_PRODUCER)],
      messageProviders: {
        'a task created through the web app': async () => {
          const checked = checkForm({
            title: 'Water the plants',
            description: 'both rooms',
            dueDate: '2030-02-01',
          });
          if (!('task' in checked)) throw new Error(`the form was refused: ${checked.refused}`);
          const task = await memoryStore().add(checked.task);
          return JSON.parse(taskMessage(task).body.toString('utf8'));
        },
      },
      logLevel: 'warn',
    }).verify();
  });
});
