// Blob events for the Functions host's blob trigger, served by the Azurite process at
// `/<account>/$events` (`$` makes it a name no container can have): a long-lived GET answered with one
// JSON line per write of a blob version, in Event Grid's `Microsoft.Storage.BlobCreated` shape, in the
// order the writes were answered, from the moment the answer's headers are sent. The real runtime learns
// of new blobs from the storage analytics logs (`$logs`) it polls, or from Event Grid; a stream
// pushed by the store itself costs nothing while nothing is written.
//
// Besides events, `{"watermark": <ms>}` lines: every blob write that Azurite received before that time
// (its own clock, the one its Last-Modified comes from) has been answered and its event sent. A
// subscriber may move its scan mark up to there.
//
// A subscriber proves it holds the account key: `Authorization: SharedKey <account>:<signature>`, the
// HMAC-SHA256 of `GET\n<path>` with the key (as Shared Key signs requests; here a fixed string, as the
// stream carries no content of blobs, only their names).
const { createHmac, randomUUID, timingSafeEqual } = require('node:crypto');
const { Operation } = require('azurite/dist/src/blob/generated/artifacts/operation.js');

const EVENTS = '$events';
/** Storage API names (as in Event Grid's `data.api`) of the operations that write a blob version. */
const API = {
  BlockBlob_Upload: 'PutBlob',
  PageBlob_Create: 'PutBlob',
  AppendBlob_Create: 'PutBlob',
  BlockBlob_CommitBlockList: 'PutBlockList',
  BlockBlob_PutBlobFromUrl: 'CopyBlob',
  Blob_StartCopyFromURL: 'CopyBlob',
  Blob_CopyFromURL: 'CopyBlob',
  AppendBlob_AppendBlock: 'AppendBlock',
  PageBlob_UploadPages: 'PutPage',
  Blob_SetMetadata: 'SetBlobMetadata',
  Blob_SetHTTPHeaders: 'SetBlobProperties',
};
/**
 * Watermarks follow writes by this much, one for all the writes meanwhile: subscribers move their scan
 * mark with them, and store it at most once a second.
 */
const WATERMARK_MS = 200;
const BLOB_TYPE = { BlockBlob: 'BlockBlob', PageBlob: 'PageBlob', AppendBlob: 'AppendBlob' };

/** The account keys Azurite was given (AZURITE_ACCOUNTS, `name:key1[:key2];…`). */
function accountKeys() {
  const keys = new Map();
  for (const entry of (process.env.AZURITE_ACCOUNTS ?? '').split(';').filter(Boolean)) {
    const [name, ...values] = entry.split(':');
    keys.set(
      name,
      values.map((value) => Buffer.from(value, 'base64')),
    );
  }
  return keys;
}

/** Wraps the server Azurite creates: serves the streams, and reports each write to them. */
function serveBlobEvents(server) {
  const keys = accountKeys();
  /** @type {Set<{ res: import('node:http').ServerResponse, account: string, prefix: string }>} */
  const subscribers = new Set();
  /** When each write under way arrived (ms): the watermark stays before the oldest. */
  const writes = new Set();
  let sequence = 0n;
  let watermarkDue = false;

  const watermark = () => {
    watermarkDue = false;
    let time = Date.now();
    for (const arrived of writes) time = Math.min(time, arrived.at);
    const line = `${JSON.stringify({ watermark: time })}\n`;
    for (const subscriber of subscribers) subscriber.res.write(line);
  };

  const subscribe = (req, res, account) => {
    const path = new URL(req.url, 'http://x').pathname;
    const [scheme, credential = ''] = (req.headers.authorization ?? '').split(' ');
    const signature = Buffer.from(credential.slice(account.length + 1), 'base64');
    const signed = (keys.get(account) ?? []).some((key) => {
      const expected = createHmac('sha256', key).update(`GET\n${path}`).digest();
      return expected.length === signature.length && timingSafeEqual(expected, signature);
    });
    if (req.method !== 'GET' || scheme !== 'SharedKey' || !credential.startsWith(`${account}:`) || !signed) {
      res.writeHead(req.method === 'GET' ? 403 : 405).end();
      return;
    }
    const subscriber = {
      res,
      account,
      prefix: new URL(req.url, 'http://x').searchParams.get('subjectBeginsWith') ?? '',
    };
    subscribers.add(subscriber);
    res.on('close', () => subscribers.delete(subscriber));
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    res.flushHeaders();
  };

  const written = (req, res) => {
    const context = res.locals?.azurite_blob_context;
    const api = context && API[Operation[context.operation]];
    const etag = res.getHeader('etag');
    const lastModified = res.getHeader('last-modified');
    if (subscribers.size === 0 || !api || !context.blob || res.statusCode >= 300 || !etag || !lastModified)
      return;
    const subject = `/blobServices/default/containers/${context.container}/blobs/${context.blob}`;
    // Most writes interest no one (the trigger's own receipts): the event is made only for those it does.
    const to = [...subscribers].filter(
      (subscriber) => subscriber.account === context.account && subject.startsWith(subscriber.prefix),
    );
    if (to.length === 0) return;
    const event = {
      topic: `/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/taskstack/providers/Microsoft.Storage/storageAccounts/${context.account}`,
      subject,
      eventType: 'Microsoft.Storage.BlobCreated',
      // The write's Last-Modified, as the blob's listing shows it (whole seconds).
      eventTime: new Date(lastModified).toISOString(),
      id: randomUUID(),
      data: {
        api,
        clientRequestId: req.headers['x-ms-client-request-id'],
        requestId: res.getHeader('x-ms-request-id'),
        eTag: String(etag).replace(/^"|"$/g, ''),
        blobType:
          BLOB_TYPE[req.headers['x-ms-blob-type']] ?? (api === 'PutBlockList' ? 'BlockBlob' : undefined),
        url: `http://${req.headers.host}/${context.account}/${context.container}/${encodeURI(context.blob)}`,
        sequencer: (++sequence).toString(16).padStart(32, '0'),
      },
      dataVersion: '',
      metadataVersion: '1',
    };
    const line = `${JSON.stringify(event)}\n`;
    for (const subscriber of to) subscriber.res.write(line);
  };

  const emit = server.emit;
  server.emit = function (name, ...args) {
    if (name !== 'request') return emit.call(this, name, ...args);
    const [req, res] = args;
    const [, account, container] = (req.url ?? '').split(/[/?]/, 3);
    if (container === EVENTS) {
      subscribe(req, res, account);
      return true;
    }
    // Every write is tracked, subscribers or not: one that began before a subscription and ends after
    // it is in neither that subscriber's first sweep nor, unless tracked, before its watermarks.
    if (req.method === 'PUT') {
      const write = { at: Date.now() };
      writes.add(write);
      res.once('finish', () => written(req, res));
      res.once('close', () => {
        writes.delete(write);
        if (!watermarkDue && subscribers.size > 0) {
          watermarkDue = true;
          setTimeout(watermark, WATERMARK_MS);
        }
      });
    }
    return emit.call(this, name, ...args);
  };
}

module.exports = { serveBlobEvents };
