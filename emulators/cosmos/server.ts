import { type KeyObject, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { TlsMaterial } from '../core/ca.ts';
import { BodyTooLargeError, createTlsServer, readBody } from '../core/http.ts';
import { type Credential, checkAuthorization, isQuery, parseTarget, type Target } from './auth.ts';
import { MAX_ITEM_BYTES } from './container.ts';
import { document, postDocuments, readDocuments } from './documents.ts';
import { CosmosError, errorBody, errors } from './errors.ts';
import { containers, databases, type Handler, type Reply, readAccount, type Service } from './resources.ts';

/** Handlers by resource shape and method. */
const routes: Record<string, Record<string, Handler>> = {
  account: { GET: readAccount },
  dbs: {
    GET: databases.list,
    POST: (r, s) => (isQuery(r.headers) ? databases.list(r, s) : databases.create(r, s)),
  },
  db: { GET: databases.read, DELETE: databases.delete },
  colls: {
    GET: containers.list,
    POST: (r, s) => (isQuery(r.headers) ? containers.list(r, s) : containers.create(r, s)),
  },
  coll: { GET: containers.read, PUT: containers.replace, DELETE: containers.delete },
  pkranges: { GET: containers.pkranges },
  docs: { GET: readDocuments, POST: postDocuments },
  doc: { GET: document.read, PUT: document.replace, DELETE: document.delete, PATCH: document.patch },
};

/** `dbs/x/colls/y/docs` → 'docs'; undefined for paths Cosmos does not have. */
function shapeOf({ segments: s }: Target): string | undefined {
  if ((s.length >= 1 && s[0] !== 'dbs') || (s.length >= 3 && s[2] !== 'colls')) return undefined;
  if (s.length === 5) return s[4] === 'docs' || s[4] === 'pkranges' ? s[4] : undefined;
  if (s.length === 6 && s[4] !== 'docs') return undefined;
  return ['account', 'dbs', 'db', 'colls', 'coll', undefined, 'doc'][s.length];
}

/** The body as JSON: refusing bodies over Cosmos's 2 MB request limit. */
async function jsonBody(req: IncomingMessage): Promise<unknown> {
  let raw: Buffer;
  try {
    // A little slack above the item limit for the request envelope (batch, patch).
    raw = await readBody(req, MAX_ITEM_BYTES + 64 * 1024);
  } catch (error) {
    if (error instanceof BodyTooLargeError) throw errors.tooLarge();
    throw error;
  }
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw errors.invalidPayload();
  }
}

export interface CosmosServerOptions {
  tls: TlsMaterial;
  service: Service;
  /** Checks the request's credential (master key done; AAD tokens verified here), given the address. */
  authorize(credential: Credential, req: IncomingMessage, target: Target): Promise<void>;
  /** A KeyObject: HMAC with it skips importing the key on every request. */
  masterKey: KeyObject;
  log(line: string): void;
}

export function createCosmosServer(options: CosmosServerOptions): Server {
  const { service, log } = options;
  const send = (res: ServerResponse, activityId: string, reply: Reply) => {
    const text = reply.body === undefined ? '' : JSON.stringify(reply.body);
    res.writeHead(reply.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'x-ms-activity-id': activityId,
      'x-ms-request-charge': '1',
      ...reply.headers,
    });
    res.end(text);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const activityId = randomUUID();
    try {
      // Cosmos has no query strings: a '?' is part of an id (the SDK leaves it unescaped), as Azure reads it.
      const pathname = req.url ?? '/';
      const target = parseTarget(pathname);
      if (!target) throw errors.resourceNotFound();
      const credential = checkAuthorization(req.headers, req.method ?? '', target, options.masterKey);
      await options.authorize(credential, req, target);
      const shape = shapeOf(target);
      const byMethod = shape ? routes[shape] : undefined;
      if (!byMethod) throw errors.resourceNotFound();
      const handler = byMethod[req.method ?? ''];
      if (!handler) throw errors.methodNotAllowed();
      const request = {
        method: req.method as string,
        target,
        headers: req.headers,
        body: () => jsonBody(req),
      };
      send(res, activityId, await handler(request, service));
    } catch (error) {
      if (!(error instanceof CosmosError)) log(`cosmos: internal error: ${(error as Error).stack ?? error}`);
      const failure =
        error instanceof CosmosError
          ? error
          : new CosmosError(
              500,
              'InternalServerError',
              'Unknown server error occurred when processing this request.',
            );
      const headers: Record<string, string> = failure.substatus
        ? { 'x-ms-substatus': String(failure.substatus) }
        : {};
      // An unread body must not be taken for the next request on this keep-alive connection.
      if (!req.complete) res.setHeader('connection', 'close');
      send(res, activityId, { status: failure.status, body: errorBody(failure, activityId), headers });
    }
  };

  return createTlsServer(options.tls, { keepAliveTimeout: 120_000 }, (req, res) => void handle(req, res));
}
