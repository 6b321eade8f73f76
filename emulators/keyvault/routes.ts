/**
 * The vault's REST surface (`/secrets`, `/deletedsecrets`): authentication by bearer token with Key
 * Vault's challenge, api-version, routing, permission checks and request bodies.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../core/http.ts';
import { type TokenVerifier, tenantIssuers, type VerifiedCaller } from '../identity/verify.ts';
import type { AccessPolicies, SecretPermission } from './access.ts';
import * as err from './errors.ts';
import {
  backupInput,
  decodeSegment,
  decodeSkipToken,
  encodeSkipToken,
  jsonBody,
  props,
  SECRET_NAME,
  secretInput,
} from './requests.ts';
import type { Page, Vault } from './vault.ts';

const AUDIENCES = ['https://vault.azure.net', 'https://vault.azure.net/'];
const API_VERSIONS = ['2016-10-01', '7.0', '7.1', '7.2', '7.3', '7.4', '7.5', '7.6', '2025-07-01'];
const LATEST_API_VERSION = '2025-07-01';
const MAX_RESULTS = 25;

export interface VaultRoutesOptions {
  vault: Vault;
  policies: AccessPolicies;
  verifier: TokenVerifier;
  baseUrl: string;
  issuer: string;
  /** `Bearer authorization="…", resource="https://vault.azure.net"`. */
  challenge: string;
  log(message: string): void;
}

interface Request {
  caller: VerifiedCaller;
  query: URLSearchParams;
  apiVersion: string;
  body(): Promise<unknown>;
}
type Handler = (request: Request) => Promise<[number, unknown?]> | [number, unknown?];
interface Route {
  permission: SecretPermission;
  handle: Handler;
}

export function vaultHandler(options: VaultRoutesOptions) {
  const { vault, policies, verifier, baseUrl, issuer, challenge } = options;
  const vaultLabel = `${new URL(baseUrl).host};location=local`;

  async function authenticate(authorization: string | undefined): Promise<VerifiedCaller> {
    if (!authorization?.match(/^Bearer\s+\S/i)) {
      throw err.unauthorized('AKV10000: Request is missing a Bearer or PoP token.', challenge);
    }
    try {
      return await verifier.verify(authorization, AUDIENCES);
    } catch (error) {
      const { reason, found } = error as { reason?: string; found?: string };
      if (reason === 'audience') {
        throw err.unauthorized(
          `AKV10022: Invalid audience. Expected https://vault.azure.net, found: ${found}.`,
          challenge,
        );
      }
      if (reason === 'issuer') {
        throw err.unauthorized(
          `AKV10032: Invalid issuer. Expected one of ${tenantIssuers(issuer).join(', ')}, found ${found}.`,
          challenge,
        );
      }
      if (reason === 'unavailable') {
        options.log('cannot verify tokens: the identity emulator keys are unreachable');
        throw new err.KvError(500, 'InternalServerError', 'Token validation is unavailable.');
      }
      const code = { expired: 'IDX10223', 'not-yet-valid': 'IDX10222', signature: 'IDX10501' }[reason ?? ''];
      throw err.unauthorized(`Error validating token: ${code ?? 'IDX14100'}`, challenge);
    }
  }

  const listing = (path: string, list: (size: number, after?: string) => Page<unknown>): Handler => {
    return ({ query, apiVersion }) => {
      const given = query.get('maxresults');
      const size = given === null ? MAX_RESULTS : Number(given);
      if (!Number.isInteger(size) || size < 1 || size > MAX_RESULTS) {
        throw err.badParameter(`The value of maxresults must be between 1 and ${MAX_RESULTS}.`);
      }
      const result = list(size, decodeSkipToken(query.get('$skiptoken')));
      const next = result.next === undefined ? null : new URL(`${baseUrl}${path}`);
      if (next) {
        next.searchParams.set('api-version', apiVersion);
        next.searchParams.set('$skiptoken', encodeSkipToken(result.next as string));
        if (given !== null) next.searchParams.set('maxresults', given);
      }
      return [
        200,
        { value: result.value, nextLink: next ? next.href.replace('%24skiptoken', '$skiptoken') : null },
      ];
    };
  };

  /** The operations a path offers, by method; `undefined` when the path names nothing. */
  function operations(collection?: string, name?: string, extra?: string): Record<string, Route> | undefined {
    if (collection === 'secrets') {
      if (name === undefined)
        return { GET: { permission: 'list', handle: listing('secrets', (s, a) => vault.list(s, a)) } };
      if (extra === undefined) {
        return {
          GET: { permission: 'get', handle: () => [200, vault.get(name)] },
          PUT: {
            permission: 'set',
            handle: async (r) => [200, vault.set(name, secretInput(await r.body()))],
          },
          PATCH: {
            permission: 'set',
            handle: async (r) => [200, vault.update(name, undefined, props(await r.body()))],
          },
          DELETE: { permission: 'delete', handle: () => [200, vault.delete(name)] },
          // `POST /secrets/restore` restores; a secret named `restore` is still read and written as any other.
          ...(name === 'restore' && {
            POST: {
              permission: 'restore',
              handle: async (r) => [200, vault.restore(backupInput(await r.body()))],
            },
          }),
        };
      }
      if (extra === 'backup') {
        return {
          POST: {
            permission: 'backup',
            handle: () => [200, { value: vault.backup(name).toString('base64url') }],
          },
        };
      }
      if (extra === 'versions') {
        const list = listing(`secrets/${name}/versions`, (s, a) => vault.listVersions(name, s, a));
        return { GET: { permission: 'list', handle: list } };
      }
      return {
        GET: { permission: 'get', handle: () => [200, vault.get(name, extra)] },
        PATCH: {
          permission: 'set',
          handle: async (r) => [200, vault.update(name, extra, props(await r.body()))],
        },
      };
    }
    if (collection === 'deletedsecrets') {
      if (name === undefined) {
        return {
          GET: { permission: 'list', handle: listing('deletedsecrets', (s, a) => vault.listDeleted(s, a)) },
        };
      }
      if (extra === undefined) {
        return {
          GET: { permission: 'get', handle: () => [200, vault.getDeleted(name)] },
          DELETE: {
            permission: 'purge',
            handle: () => {
              vault.purge(name);
              return [204];
            },
          },
        };
      }
      if (extra === 'recover')
        return { POST: { permission: 'recover', handle: () => [200, vault.recover(name)] } };
    }
    return undefined;
  }

  function route(method: string, segments: string[]): Route {
    const [collection, name, extra, ...rest] = segments;
    const ops = rest.length === 0 ? operations(collection, name, extra) : undefined;
    if (!ops) throw err.notFoundPath();
    if (name !== undefined && !SECRET_NAME.test(name)) throw err.invalidName(name);
    const found = ops[method];
    if (!found) throw err.methodNotAllowed(method);
    return found;
  }

  async function serve(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', baseUrl);
    const caller = await authenticate(req.headers.authorization);
    const apiVersion = url.searchParams.get('api-version');
    if (!apiVersion) throw err.badParameter("The 'api-version' query parameter is missing.");
    if (!API_VERSIONS.includes(apiVersion)) throw err.unsupportedApiVersion(apiVersion, LATEST_API_VERSION);
    const segments = url.pathname.split('/').filter(Boolean).map(decodeSegment);
    const found = route(req.method ?? 'GET', segments);
    if (!policies.allows(caller.principalId, found.permission)) {
      const who = `appid=${caller.clientId};oid=${caller.principalId};iss=${caller.issuer}`;
      throw err.forbiddenByPolicy(who, found.permission, vaultLabel);
    }
    const [status, body] = await found.handle({
      caller,
      query: url.searchParams,
      apiVersion,
      body: () => jsonBody(req),
    });
    if (body === undefined) res.writeHead(status).end();
    else sendJson(res, status, body);
  }

  return (req: IncomingMessage, res: ServerResponse) =>
    serve(req, res).catch((error: unknown) => {
      if (!(error instanceof err.KvError)) throw error;
      // Unread request bodies are drained so the connection stays usable.
      req.resume();
      sendJson(res, error.status, error.body, error.headers);
    });
}
