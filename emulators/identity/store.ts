/**
 * Where the provider keeps sessions, interactions, codes, grants and refresh tokens: this process's
 * memory (lost on restart, README).
 */
import type { Configuration } from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';

/**
 * The map oidc-provider's memory adapter keeps its entries in, without the size limit of the library's
 * own (about a thousand entries, the oldest dropped past it): an entry stays until it expires or is
 * removed, as Entra keeps a refresh token its 90 days however many others are issued. Expired entries
 * are also swept now and then, so ones never read again (used codes, finished interactions) go too.
 */
class ExpiringMap {
  readonly #entries = new Map<string, { value: unknown; expiry: number }>();
  #setsSinceSweep = 0;

  get(key: string) {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiry > Date.now()) return entry.value;
    this.#entries.delete(key);
    return undefined;
  }

  set(key: string, value: unknown, { maxAge }: { maxAge?: number } = {}) {
    if (++this.#setsSinceSweep >= 1000) this.#sweep();
    this.#entries.set(key, { value, expiry: Date.now() + (maxAge ?? Number.POSITIVE_INFINITY) });
    return this;
  }

  delete(key: string) {
    return this.#entries.delete(key);
  }

  #sweep() {
    this.#setsSinceSweep = 0;
    const now = Date.now();
    for (const [key, entry] of this.#entries) if (entry.expiry <= now) this.#entries.delete(key);
  }
}

/**
 * How long an entry is kept past its expiry (seconds; the adapter's clock tolerance): oidc-provider judges
 * expiry itself, so a code or refresh token redeemed late is told apart from an unknown one (AADSTS70008,
 * "has expired", rather than AADSTS9002313, "malformed or invalid"), as Entra tells them apart.
 */
const EXPIRED_KEPT = 24 * 3600;

/**
 * oidc-provider's in-memory adapter on an ExpiringMap, with two of Entra's habits its protocol lacks:
 * - a refresh token stays valid after use (Entra replaces it on every use but does not revoke the old
 *   one); oidc-provider marks a rotated one spent, and revokes the whole grant if it comes back;
 * - nothing is revoked by grant: the only revocation oidc-provider does here is on a code's second
 *   redemption (sign-out keeps tokens, `expiresWithSession`; no revocation endpoint), where Entra
 *   only refuses that redemption.
 */
export function entraStore(): NonNullable<Configuration['adapter']> {
  const entries = new ExpiringMap();
  return (model: string) => {
    const store = new MemoryAdapter(model, entries, EXPIRED_KEPT);
    return {
      upsert: (id, payload, expiresIn) => store.upsert(id, payload, expiresIn),
      find: (id) => store.find(id),
      findByUserCode: (userCode) => store.findByUserCode(userCode),
      findByUid: (uid) => store.findByUid(uid),
      destroy: (id) => store.destroy(id),
      consume: model === 'RefreshToken' ? async () => undefined : (id) => store.consume(id),
      revokeByGrantId: async () => undefined,
    };
  };
}
