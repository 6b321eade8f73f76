/**
 * Where the provider keeps sessions, interactions, codes, grants and refresh tokens: this process's
 * memory (lost on restart, README).
 */
import type { Configuration } from 'oidc-provider';
import { createMemoryAdapter } from 'oidc-provider/lib/adapters/memory_adapter.js';

/**
 * oidc-provider's in-memory store, with two of Entra's habits its protocol lacks:
 * - a refresh token stays valid after use (Entra replaces it on every use but does not revoke the old
 *   one); oidc-provider marks a rotated one spent, and revokes the whole grant if it comes back;
 * - nothing is revoked by grant: the only revocation oidc-provider does here is on a code's second
 *   redemption (sign-out keeps tokens, `expiresWithSession`; no revocation endpoint), where Entra
 *   only refuses that redemption.
 */
export function entraStore(): NonNullable<Configuration['adapter']> {
  const memory = createMemoryAdapter();
  return (model: string) => {
    const store = memory(model);
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
