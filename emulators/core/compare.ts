import { createHash, timingSafeEqual } from 'node:crypto';

/** Compares a presented key with the expected one in constant time (hashing first hides the length). */
export function sameKey(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(presented), digest(expected));
}
