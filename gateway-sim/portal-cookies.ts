/**
 * The developer portal's cookies: HMAC-signed values, HttpOnly, Secure, SameSite=Lax, scoped to the
 * portal's path. A value whose signature does not match (tampered, or signed by another data directory)
 * reads as absent.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export function cookieSigner(key: string, path: string) {
  const mac = (value: string) => createHmac('sha256', key).update(value).digest('base64url');
  return {
    /** The `Set-Cookie` value for `name`; `maxAgeSeconds` 0 deletes it. */
    set(name: string, value: string, maxAgeSeconds: number) {
      const signed = maxAgeSeconds > 0 ? `${value}.${mac(value)}` : '';
      return `${name}=${signed}; Path=${path}; Max-Age=${maxAgeSeconds}; HttpOnly; Secure; SameSite=Lax`;
    },
    /** The cookie's value if its signature is ours. */
    get(req: IncomingMessage, name: string): string | undefined {
      for (const part of (req.headers.cookie ?? '').split(';')) {
        const [key, ...rest] = part.trim().split('=');
        if (key !== name) continue;
        const signed = rest.join('=');
        const dot = signed.lastIndexOf('.');
        if (dot < 0) return undefined;
        const value = signed.slice(0, dot);
        const given = Buffer.from(signed.slice(dot + 1));
        const expected = Buffer.from(mac(value));
        return given.length === expected.length && timingSafeEqual(given, expected) ? value : undefined;
      }
      return undefined;
    },
  };
}
