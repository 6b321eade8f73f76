/**
 * Which blobs of a container are new, decided as the runtime's `ScanBlobScanLogHybridPollingStrategy`
 * does: a sweep lists the container in pages and takes the blobs modified at or after the latest scan;
 * the latest scan is kept in `azure-webjobs-hosts/blobscaninfo/<hostId>/<account>/<container>/scanInfo`
 * (`{"LatestScan": …}`), so a restarted host does not look at older blobs again. The first sweep of a
 * host without scan info takes every blob; receipts say which already ran.
 *
 * Where the runtime moves the mark to the newest blob seen (a blob written meanwhile behind the sweep,
 * older than that, would be left to its storage-logs source), the mark here is the time the sweep began
 * by the storage's own clock (`Date` of the first page) less a second: every blob written after that
 * instant, anywhere in the listing, is seen by the next sweep.
 */
import type { BlobServiceClient, ContainerClient } from '@azure/storage-blob';
import { downloadBlob, isNotFound } from '../connections.ts';
import { HOSTS_CONTAINER } from './blob-receipts.ts';

/** The runtime's budget of blobs listed per container and poll. */
export const PAGE_SIZE = 5000;
/** Blob timestamps have whole seconds: a second's margin keeps a blob of the mark's second in view. */
const MARGIN_MS = 1000;

export interface ListedBlob {
  name: string;
  /** Quoted. */
  etag: string;
  lastModified: number;
}

export class ContainerScan {
  readonly #info;
  readonly #container: ContainerClient;
  /** Blobs modified before this (ms since epoch) were seen by an earlier sweep; 0: none was. */
  #latestScan = 0;
  #saved = 0;
  /** The newest modification time any sweep listed (ms since epoch). */
  #newest = 0;

  constructor(
    hosts: BlobServiceClient,
    container: ContainerClient,
    hostId: string,
    private readonly prefix: string,
  ) {
    this.#container = container;
    this.#info = hosts
      .getContainerClient(HOSTS_CONTAINER)
      .getBlockBlobClient(`blobscaninfo/${hostId}/${hosts.accountName}/${container.containerName}/scanInfo`);
  }

  get latestScan(): number {
    return this.#latestScan;
  }

  async load(): Promise<void> {
    try {
      const text = (await downloadBlob(this.#info)).content.toString('utf8');
      this.#latestScan = Date.parse((JSON.parse(text) as { LatestScan: string }).LatestScan) || 0;
      this.#saved = this.#latestScan;
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  /**
   * One sweep: calls `found` for each blob modified at or after the latest scan, then moves the mark to
   * the sweep's start. Answers how many blobs were listed.
   */
  async sweep(found: (blob: ListedBlob) => void, stopped: () => boolean): Promise<number> {
    let began: number | undefined;
    let listed = 0;
    for await (const page of this.#container
      .listBlobsFlat({ prefix: this.prefix })
      .byPage({ maxPageSize: PAGE_SIZE })) {
      if (stopped()) return listed;
      began ??= page.date?.getTime() ?? Date.now();
      for (const item of page.segment.blobItems) {
        listed++;
        const lastModified = item.properties.lastModified.getTime();
        this.#newest = Math.max(this.#newest, lastModified);
        if (lastModified < this.#latestScan) continue;
        const etag = item.properties.etag ?? '';
        found({ name: item.name, etag: etag.startsWith('"') ? etag : `"${etag}"`, lastModified });
      }
    }
    if (began !== undefined) this.#latestScan = Math.max(this.#latestScan, began - MARGIN_MS);
    return listed;
  }

  /** A blob the store reported written (a blob event): what the next save must cover. */
  heard(lastModified: number): void {
    this.#newest = Math.max(this.#newest, lastModified);
  }

  /**
   * Moves the mark up to `watermark` (ms, the store's clock): every blob written before it has been
   * reported. Listings show whole seconds, so the mark stays a second behind it.
   */
  advance(watermark: number): void {
    this.#latestScan = Math.max(this.#latestScan, watermark - MARGIN_MS);
  }

  /**
   * Stores the mark, held back to `oldestUnfinished` (the oldest blob found but not yet run) so that a
   * restart finds what was pending. Best effort, as the runtime's: a lost update means a longer sweep.
   * As the runtime's, a sweep that listed no blob modified since the stored mark writes nothing: a
   * restart from that mark finds the same blobs (a quiet container costs no write per sweep, and
   * Azurite no save of its whole database).
   */
  async save(oldestUnfinished = Number.POSITIVE_INFINITY): Promise<void> {
    const latestScan = Math.min(this.#latestScan, oldestUnfinished);
    if (latestScan <= this.#saved || this.#newest < this.#saved) return;
    const text = JSON.stringify({ LatestScan: new Date(latestScan).toISOString() });
    try {
      await this.#info.upload(text, Buffer.byteLength(text));
      this.#saved = latestScan;
    } catch {}
  }
}
