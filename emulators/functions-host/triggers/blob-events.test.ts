/**
 * When the blob events stream is subscribed again after it ended: at once, but not twice within the
 * backoff's first delay (then after the backoff). The host's own timers are fake (the backoff shows as
 * a pending timer); the stream is a real HTTP server.
 */
import { createServer, type ServerResponse } from 'node:http';
import { StorageSharedKeyCredential } from '@azure/storage-blob';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { close, listen } from '../../core/http.ts';
import { OUTAGE_BOUNDS } from '../listeners.ts';
import { BlobEvents } from './blob-events.ts';

const streams: ServerResponse[] = [];
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  res.flushHeaders();
  streams.push(res);
});
let url: string;
beforeAll(async () => {
  url = `http://127.0.0.1:${await listen(server, 0)}/devstoreaccount1/$events`;
});
afterAll(() => close(server));
afterEach(() => vi.useRealTimers());

it('subscribes again at once when a stream ends, but not twice within the backoff’s first delay', async () => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  // Each handler call resolves the promise the test waits on next.
  let next: () => void = () => {};
  const counts = { connected: 0, lost: 0 };
  const handlers = {
    connected() {
      counts.connected++;
      next();
    },
    lost() {
      counts.lost++;
      next();
    },
    blob() {},
    watermark() {},
  };
  /** Resolves once `counts[what]` reaches `count`. */
  const until = (what: keyof typeof counts, count: number) =>
    new Promise<void>((resolve) => {
      next = () => counts[what] >= count && resolve();
      next();
    });
  const credential = new StorageSharedKeyCredential('devstoreaccount1', Buffer.alloc(64).toString('base64'));
  const events = BlobEvents.open(url, credential, 'tasks', '', handlers);
  try {
    await until('connected', 1);
    // The first stream ends: no timer, a new subscription.
    streams[0]?.destroy();
    await until('lost', 1);
    expect(vi.getTimerCount()).toBe(0);
    await until('connected', 2);
    // The second ends as soon as it began: the next subscription waits for the backoff.
    streams[1]?.destroy();
    await until('lost', 2);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(OUTAGE_BOUNDS.minMs);
    await until('connected', 3);
    // The backoff's first delay after the last one at once: at once again.
    streams[2]?.destroy();
    await until('lost', 3);
    expect(vi.getTimerCount()).toBe(0);
    await until('connected', 4);
    expect(streams).toHaveLength(4);
  } finally {
    events?.stop();
    for (const stream of streams) stream.destroy();
  }
});
