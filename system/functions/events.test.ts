/**
 * The document-created publisher's events, and its registration as the host (and Azure) sees it.
 * End to end (change feed → topic → TaskCreatedNotification): document-created.test.ts and outages.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { DOCUMENT_CREATED, documentCreatedEvents } from './src/lib/events.ts';

describe('documentCreatedEvents', () => {
  it('makes one vendor-prefixed DocumentCreated event per document, data holding only the task', () => {
    const now = new Date('2030-01-02T03:04:05.000Z');
    const documents = [
      { id: 'a', Title: 'T', Description: 'ZW5jcnlwdGVk', DueDate: 'Fri', _rid: 'x', _etag: '"1"', _ts: 1 },
      { id: 'b', Title: 'U' },
    ];
    const events = documentCreatedEvents(documents, 'TasksDB', 'Tasks', now);
    expect(events).toHaveLength(2);
    expect(events[0]).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      eventType: 'Microsoft.DocumentDB.DocumentCreated',
      subject: '/dbs/TasksDB/colls/Tasks/docs/a',
      eventTime: '2030-01-02T03:04:05.000Z',
      dataVersion: '1.0',
      data: { id: 'a', Title: 'T', Description: 'ZW5jcnlwdGVk', DueDate: 'Fri' },
    });
    expect(events[1]?.data).toEqual({ id: 'b', Title: 'U', Description: null, DueDate: null });
    expect(events[0]?.id).not.toBe(events[1]?.id);
    expect(DOCUMENT_CREATED).toBe('Microsoft.DocumentDB.DocumentCreated');
  });
});
