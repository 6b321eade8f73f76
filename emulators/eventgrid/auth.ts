/**
 * Publisher authentication as Event Grid does it: the topic access key in the `aeg-sas-key` header or
 * query parameter, or a shared access signature in the `aeg-sas-token` header or as `Authorization:
 * SharedAccessSignature <token>` (`r=<resource>&e=<expiry>&s=<signature>`, the signature an HMAC-SHA256
 * of `r=…&e=…` keyed with the base64-decoded access key, as `generateSharedAccessSignature` of
 * `@azure/eventgrid` and the documentation's C# and Python examples make it), or a Microsoft Entra token
 * (`Authorization: Bearer`, entra.ts).
 */
import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { StackClock } from '../core/clock.ts';
import { sameKey } from '../core/compare.ts';
import type { EntraCheck } from './entra.ts';
import { EventGridError } from './errors.ts';
import { ISO_8601 } from './events.ts';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Azure's text, down to the stray " ." it puts after the reason. */
const NOT_BASE64 =
  'This is due to the reason: The input is not a valid Base-64 string as it contains a non-base 64 ' +
  'character, more than two padding characters, or an illegal character among the padding characters. .';

const SAS_FORMAT =
  'Invalid key in aeg-sas-token. Valid format :r=UrlEncodedResource&e=UrlEncodedUtcExpiration&s=UrlEncodedSignature.';

/**
 * A token's expiry → ms since the epoch, or NaN: `M/d/yyyy h:mm:ss AM|PM` (UTC) as .NET's en-US
 * `ToString` writes it (newer .NET puts a no-break space before AM/PM), or ISO 8601 as Python's
 * `isoformat()` writes it (no zone: UTC).
 */
function parseExpiry(text: string): number {
  if (ISO_8601.test(text)) return Date.parse(/(Z|[+-]\d{2}:?\d{2})$/i.test(text) ? text : `${text}Z`);
  const m = /^(\d{1,2})\/(\d{1,2})\/(\d{4}) (\d{1,2}):(\d{2}):(\d{2})[ \u00a0\u202f](AM|PM)$/.exec(text);
  if (!m) return Number.NaN;
  const [, month, day, year, hour, minute, second, half] = m.map((part) => part ?? '');
  const hours = (Number(hour) % 12) + (half === 'PM' ? 12 : 0);
  return Date.UTC(Number(year), Number(month) - 1, Number(day), hours, Number(minute), Number(second));
}

/** What a request without a usable signature gets. */
export const noSignature = () =>
  new EventGridError(
    401,
    'Unauthorized',
    'Request must contain one of the following authorization signature: aeg-sas-token, aeg-sas-key.',
  );

export interface PublisherAuth {
  /**
   * Throws the EventGridError Azure would answer when the request may not publish to `topic`; `url` is
   * the topic's `…/api/events` URL as the request named it (its Host header, its path), `armId` its
   * resource id.
   */
  check(
    headers: IncomingHttpHeaders,
    query: URLSearchParams,
    topic: { name: string; url: string; armId: string },
  ): Promise<void>;
}

export function publisherAuth(
  key: string,
  host: string,
  clock: StackClock,
  entra: EntraCheck,
): PublisherAuth {
  const notAuthorized = (reason?: string) =>
    new EventGridError(
      401,
      'Unauthorized',
      `The request authorization key is not authorized for ${host.toUpperCase()}.${reason ? ` ${reason}` : ''}`,
    );

  function checkToken(token: string, topicUrl: string) {
    const parts = new Map(
      token.split('&').map((pair) => {
        const at = pair.indexOf('=');
        return [pair.slice(0, at), pair.slice(at + 1)] as const;
      }),
    );
    const [resource, expiry, signature] = ['r', 'e', 's'].map((name) => parts.get(name));
    if (resource === undefined || expiry === undefined || signature === undefined)
      throw new EventGridError(400, 'InvalidSas', SAS_FORMAT);
    let decoded: string[];
    try {
      // Form decoding, as .NET's UrlDecode: the documented generators write a space as '+'.
      decoded = [resource, expiry, signature].map((part) => decodeURIComponent(part.replaceAll('+', ' ')));
    } catch {
      throw new EventGridError(400, 'InvalidSas', SAS_FORMAT);
    }
    const [decodedResource = '', decodedExpiry = '', decodedSignature] = decoded;
    // The resource names a URL (plus an api version, not compared) that covers every URL under it, as
    // Event Grid documents; but never more than one topic, each a host of its own in Azure.
    const covered = (decodedResource.split('?')[0] ?? '').replace(/\/+$/, '').toLowerCase();
    const target = topicUrl.toLowerCase();
    const forTopic =
      (target === covered || target.startsWith(`${covered}/`)) &&
      covered.length >= target.length - '/api/events'.length;
    const expires = parseExpiry(decodedExpiry);
    const expected = createHmac('sha256', Buffer.from(key, 'base64'))
      .update(`r=${resource}&e=${expiry}`)
      .digest('base64');
    if (!sameKey(decodedSignature, expected) || !forTopic || !(expires > clock.now())) throw notAuthorized();
  }

  return {
    async check(headers, query, topic) {
      const sasKey = headers['aeg-sas-key'] ?? query.get('aeg-sas-key') ?? undefined;
      const sasToken =
        headers['aeg-sas-token'] ?? /^SharedAccessSignature\s+(.*)$/i.exec(headers.authorization ?? '')?.[1];
      if (typeof sasKey === 'string') {
        if (sasKey === '')
          throw new EventGridError(400, 'InvalidSas', 'Request must have a value for aeg-sas-key.');
        if (!BASE64.test(sasKey)) throw notAuthorized(NOT_BASE64);
        if (!sameKey(sasKey, key)) throw notAuthorized();
        return;
      }
      if (typeof sasToken === 'string' && sasToken !== '') return checkToken(sasToken, topic.url);
      const bearer = headers.authorization;
      if (bearer !== undefined && /^Bearer\s/i.test(bearer)) return entra(bearer, topic);
      throw noSignature();
    },
  };
}
