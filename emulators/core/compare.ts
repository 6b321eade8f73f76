import { createHash, timingSafeEqual } from 'node:crypto';

/** What keys are compared by: equal-length digests, so that the comparison hides a key's length. */
export const keyDigest = (key: string): Buffer => createHash('sha256').update(key).digest();

/** Compares a presented key with the expected one in constant time. */
export function sameKey(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  return timingSafeEqual(keyDigest(presented), keyDigest(expected));
}
