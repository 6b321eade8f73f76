/**
 * The blob trigger's fast source where the store offers one (the stack's blob component, wired through
 * the host's `blobEvents` option): a stream of Event Grid `Microsoft.Storage.BlobCreated` events for one
 * container, plus watermarks (`emulators/blob/blob-events.cjs`). It stands where the runtime's storage
 * logs source stands: sweeps stay the safety net, one after each (re)connection and at the runtime's
 * pace whenever the stream is not connected. A lost stream is resubscribed at once (at most once per
 * first backoff delay); a refused or failed subscription is retried with the outage backoff.
 */
import { type ClientRequest, request } from 'node:http';
import { StorageSharedKeyCredential } from '@azure/storage-blob';
import { backoffDelays, OUTAGE_BOUNDS } from '../listeners.ts';
import type { ListedBlob } from './blob-scan.ts';

export interface BlobEventHandlers {
  /** Subscribed: every blob written from now on is reported. */
  connected(): void;
  /** The stream ended or failed after it had been connected. */
  lost(error: Error): void;
  blob(blob: ListedBlob): void;
  /** Every blob written before `time` (ms, the store's clock) has been reported. */
  watermark(time: number): void;
}

interface BlobCreated {
  subject: string;
  eventTime: string;
  data: { eTag: string };
}

export class BlobEvents {
  #connected = false;
  /** When a lost stream was last resubscribed at once (ms). */
  #resubscribedAt = Number.NEGATIVE_INFINITY;
  #stopped = false;
  #request: ClientRequest | undefined;
  #timer: NodeJS.Timeout | undefined;
  #delays = backoffDelays(OUTAGE_BOUNDS);
  #attempted: () => void = () => {};
  readonly #firstAttempt = new Promise<void>((resolve) => {
    this.#attempted = resolve;
  });
  readonly #url: URL;
  readonly #blobs: string;

  /**
   * The stream of `url` for the blobs of `container` whose names begin with `prefix`, or undefined when
   * the connection has no account key to sign the subscription with (an identity connection).
   */
  static open(
    url: string,
    credential: unknown,
    container: string,
    prefix: string,
    handlers: BlobEventHandlers,
  ): BlobEvents | undefined {
    if (!(credential instanceof StorageSharedKeyCredential)) return undefined;
    return new BlobEvents(url, credential, container, prefix, handlers);
  }

  private constructor(
    url: string,
    private readonly credential: StorageSharedKeyCredential,
    container: string,
    prefix: string,
    private readonly handlers: BlobEventHandlers,
  ) {
    this.#blobs = `/blobServices/default/containers/${container}/blobs/`;
    this.#url = new URL(url);
    this.#url.searchParams.set('subjectBeginsWith', `${this.#blobs}${prefix}`);
    this.#connect();
  }

  get connected(): boolean {
    return this.#connected;
  }

  /** Resolves once the first subscription has succeeded (after `connected`) or failed. */
  get firstAttempt(): Promise<void> {
    return this.#firstAttempt;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#request?.destroy();
  }

  #connect() {
    const signature = this.credential.computeHMACSHA256(`GET\n${this.#url.pathname}`);
    let ended = false;
    const end = (error: Error) => {
      if (ended) return;
      ended = true;
      this.#attempted();
      // A store that served the stream is most likely up (one connection ended): resubscribing at once
      // saves the sweeps a backoff would cost. Not again within the backoff's first delay, so that a store
      // that ends every stream as it begins cannot keep this host busy.
      const now = Date.now();
      const atOnce = this.#connected && now - this.#resubscribedAt >= OUTAGE_BOUNDS.minMs;
      if (this.#connected) {
        this.#connected = false;
        if (!this.#stopped) this.handlers.lost(error);
      }
      if (this.#stopped) return;
      if (atOnce) {
        this.#resubscribedAt = now;
        this.#connect();
      } else this.#timer = setTimeout(() => this.#connect(), this.#delays.next().value);
    };
    const req = request(
      this.#url,
      { headers: { authorization: `SharedKey ${this.credential.accountName}:${signature}` } },
      (res) => {
        res.on('error', end);
        res.on('close', () => end(new Error('the stream ended')));
        if (res.statusCode !== 200) {
          res.resume();
          return;
        }
        this.#connected = true;
        this.#delays = backoffDelays(OUTAGE_BOUNDS);
        this.handlers.connected();
        this.#attempted();
        let rest = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const lines = (rest + chunk).split('\n');
          rest = lines.pop() ?? '';
          try {
            for (const line of lines) this.#receive(JSON.parse(line));
          } catch (error) {
            // A line this host cannot read: start over (resubscribe, then sweep) rather than guess.
            res.destroy(error as Error);
          }
        });
      },
    );
    req.on('error', end);
    req.end();
    this.#request = req;
  }

  #receive(message: BlobCreated | { watermark: number }) {
    if ('watermark' in message) return this.handlers.watermark(message.watermark);
    this.handlers.blob({
      name: message.subject.slice(this.#blobs.length),
      etag: `"${message.data.eTag}"`,
      lastModified: Date.parse(message.eventTime),
    });
  }
}
