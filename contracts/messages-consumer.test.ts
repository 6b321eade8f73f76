/**
 * Message pacts of the two event payloads, from their consumers' side: the DocumentCreated event
 * (Event Grid schema, data {id, Title, Description, DueDate}) handed to TaskCreatedNotification, and the
 * task message on taskevents (the web task's camelCase JSON) handed to ProcessTaskEvents. Each message
 * is given to the real function handler, which must log what the spec says it logs.
 */
import { rmSync } from 'node:fs';
import { type EventGridEvent, InvocationContext } from '@azure/functions';
import { MatchersV3, PactV4 } from '@pact-foundation/pact';
import { afterAll, describe, expect, it } from 'vitest';
import { processTaskEvents } from '../system/functions/src/functions/ProcessTaskEvents.ts';
import { taskCreatedNotification } from '../system/functions/src/functions/TaskCreatedNotification.ts';
import {
  committedPactDrift,
  DOCUMENT_CREATED_CONSUMER,
  DOCUMENT_CREATED_PRODUCER,
  freshPactDir,
  TASK_MESSAGE_CONSUMER,
  TASK_MESSAGE_PRODUCER,
} from './pacts.ts';

const { like, regex, uuid } = MatchersV3;
const written = freshPactDir();
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** An invocation context (the library's own, in its test mode) whose log lines are collected. */
function contextFor(functionName: string) {
  const lines: string[] = [];
  const context = new InvocationContext({
    functionName,
    logHandler: (_level, ...args) => lines.push(args.join(' ')),
  });
  return { context, lines };
}

describe(`${DOCUMENT_CREATED_CONSUMER} ← ${DOCUMENT_CREATED_PRODUCER}`, () => {
  const pact = new PactV4({
    consumer: DOCUMENT_CREATED_CONSUMER,
    provider: DOCUMENT_CREATED_PRODUCER,
    dir: written,
    logLevel: 'warn',
  });

  it('a DocumentCreated event: logs the task’s title and id', () =>
    pact
      .addAsynchronousInteraction()
      .expectsToReceive('a DocumentCreated event for a created task', (b) =>
        b.withJSONContent({
          id: uuid(),
          eventType: 'Microsoft.DocumentDB.DocumentCreated',
          subject: regex(/^\/dbs\/TasksDB\/colls\/Tasks\/docs\/.+$/, '/dbs/TasksDB/colls/Tasks/docs/42'),
          eventTime: regex(ISO_TIME, '2030-01-01T09:00:00.000Z'),
          dataVersion: '1.0',
          data: {
            id: uuid('3f2b8c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b'),
            Title: like('Pay rent'),
            // As stored: the encrypted Base64 form; the event never carries the plain text.
            Description: regex(BASE64, 'q3JhbmRvbWl2MTZieXRlcy4uLg=='),
            DueDate: like('2030-01-31'),
          },
        }),
      )
      .executeTest(async (message) => {
        const event = message.contents.content as unknown as EventGridEvent;
        const { context, lines } = contextFor('TaskCreatedNotification');
        taskCreatedNotification(event, context);
        const data = event.data as { id: string; Title: string };
        expect(lines).toEqual([`TaskCreatedNotification: task created: ${data.Title} (id ${data.id})`]);
      }));
});

describe(`${TASK_MESSAGE_CONSUMER} ← ${TASK_MESSAGE_PRODUCER}`, () => {
  const pact = new PactV4({
    consumer: TASK_MESSAGE_CONSUMER,
    provider: TASK_MESSAGE_PRODUCER,
    dir: written,
    logLevel: 'warn',
  });

  it('a task message: logs it as the JSON that was sent', () =>
    pact
      .addAsynchronousInteraction()
      .expectsToReceive('a task created through the web app', (b) =>
        b.withJSONContent({
          id: uuid(),
          title: like('Water the plants'),
          description: like('both rooms'),
          dueDate: like('2030-02-01'),
        }),
      )
      .executeTest(async (message) => {
        const task = message.contents.content;
        const { context, lines } = contextFor('ProcessTaskEvents');
        // The Event Hubs trigger hands JSON bodies over parsed, in a batch.
        processTaskEvents([task], context);
        expect(lines).toEqual([`ProcessTaskEvents: message: ${JSON.stringify(task)}`]);
        expect(Object.keys(task as object).sort()).toEqual(['description', 'dueDate', 'id', 'title']);
      }));
});

describe('the committed message pact files', () => {
  afterAll(() => rmSync(written, { recursive: true, force: true }));

  it.each([
    [DOCUMENT_CREATED_CONSUMER, DOCUMENT_CREATED_PRODUCER],
    [TASK_MESSAGE_CONSUMER, TASK_MESSAGE_PRODUCER],
  ])('%s-%s: contracts/pacts/ holds exactly what the consumer tests wrote', (consumer, provider) => {
    expect(committedPactDrift(written, consumer, provider)).toBeUndefined();
  });
});
