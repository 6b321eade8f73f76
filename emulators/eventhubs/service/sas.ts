import { createHmac, timingSafeEqual } from 'node:crypto';
import type { StackClock } from '../../core/clock.ts';
import { unauthorized } from './faults.ts';

/** The namespace's one shared access policy (the connection string's `SharedAccessKeyName`). */
export interface SasRule {
  name: string;
  key: string;
}

/** What a claim allows: Event Hubs' SAS rights, which Entra ID roles map onto. */
export type Right = 'Send' | 'Listen' | 'Manage';
/** The namespace's root rule (`RootManageSharedAccessKey`) has Manage, which includes the others. */
const ALL_RIGHTS: readonly Right[] = ['Manage', 'Send', 'Listen'];

/**
 * A token that passed: the resource it grants (normalised entity path, '' for the namespace), the rights
 * it carries, and its expiry as the signer wrote it. Clients sign with their own (real) clock, so the expiry is read
 * through `StackClock.toStackTime`: moving the stack clock forward (to age events) does not expire
 * every client's token at once, while a token past its expiry is refused.
 */
export interface Claim {
  path: string;
  rights: readonly Right[];
  signedExpiry: number;
}

export function isLive(claim: Claim, clock: StackClock): boolean {
  return clock.toStackTime(claim.signedExpiry) > clock.now();
}

/** `sb://host/Hub/Partitions/0/` → `hub/partitions/0`: entity paths compare case-insensitively. */
export function entityPath(uri: string): string {
  const withScheme = uri.includes('://') ? uri : `sb://${uri}`;
  let path: string;
  try {
    path = decodeURIComponent(new URL(withScheme).pathname);
  } catch {
    path = withScheme.slice(withScheme.indexOf('://') + 3).replace(/^[^/]*/, '');
  }
  return path.replace(/^\/+|\/+$/g, '').toLowerCase();
}

/** Whether a claim on `claimPath` covers `resourcePath` (itself or anything below it). */
export function covers(claimPath: string, resourcePath: string): boolean {
  return claimPath === '' || resourcePath === claimPath || resourcePath.startsWith(`${claimPath}/`);
}

export const malformed = () =>
  unauthorized(
    'MalformedToken: The credentials contained in the authorization header are not in the correct format.',
  );
export const invalidSignature = () => unauthorized('InvalidSignature: The token has an invalid signature.');

/**
 * Verifies `SharedAccessSignature sr=<uri>&sig=<base64 HMAC-SHA256 of "<sr>\n<se>">&se=<expiry s>&skn=<rule>`
 * as Event Hubs does for a $cbs put-token: the rule must exist, the signature must match (compared in
 * constant time), the token must not have expired, and it must cover `audience`.
 */
export function verifySasToken(token: unknown, audience: string, rule: SasRule, clock: StackClock): Claim {
  if (typeof token !== 'string' || !token.startsWith('SharedAccessSignature ')) throw malformed();
  // The signed string uses `sr` exactly as it appears in the token (still URL-encoded).
  const raw = new Map(
    token
      .slice('SharedAccessSignature '.length)
      .split('&')
      .map((part) => [part.slice(0, part.indexOf('=')), part.slice(part.indexOf('=') + 1)] as const),
  );
  const sr = raw.get('sr');
  const se = raw.get('se');
  const sig = raw.get('sig');
  const skn = raw.get('skn');
  if (!sr || !se || !sig || !skn || !/^\d+$/.test(se)) throw malformed();
  let signature: Buffer;
  let keyName: string;
  try {
    signature = Buffer.from(decodeURIComponent(sig), 'base64');
    keyName = decodeURIComponent(skn);
  } catch {
    throw malformed();
  }
  const expected = createHmac('sha256', rule.key).update(`${sr}\n${se}`).digest();
  const signatureOk = signature.length === expected.length && timingSafeEqual(signature, expected);
  if (!signatureOk || keyName !== rule.name) throw invalidSignature();
  const claim = { path: entityPath(safeDecode(sr)), rights: ALL_RIGHTS, signedExpiry: Number(se) * 1000 };
  if (!isLive(claim, clock)) {
    const expiry = new Date(clock.toStackTime(claim.signedExpiry)).toISOString();
    throw unauthorized(
      `ExpiredToken: The token is expired. Expiration time: '${expiry}', Current time: '${clock.date().toISOString()}'.`,
    );
  }
  if (!covers(claim.path, entityPath(audience))) {
    throw unauthorized(
      `InvalidAudience: The token audience '${safeDecode(sr)}' does not grant access to '${audience}'.`,
    );
  }
  return claim;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
