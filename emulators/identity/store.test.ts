import type { Adapter } from 'oidc-provider';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { entraStore } from './store.ts';

/** The store as oidc-provider uses it: one adapter per model. */
const modelStore = () => entraStore() as (model: string) => Adapter;

describe('the provider store', () => {
  afterEach(() => vi.useRealTimers());

  it('keeps a refresh token and a session until they expire, however many entries come after them', async () => {
    const store = modelStore();
    const refreshTokens = store('RefreshToken');
    const sessions = store('Session');
    await refreshTokens.upsert('alice', { grantId: 'grant-1', kind: 'RefreshToken' }, 90 * 24 * 3600);
    await sessions.upsert('session-0', { uid: 'uid-0', kind: 'Session' }, 24 * 3600);
    // A sign-in stores about seven entries and every refresh one more; oidc-provider's own memory store
    // dropped the oldest past about a thousand (AADSTS9002313 for a refresh token hours old).
    for (let i = 1; i <= 5000; i++) await sessions.upsert(`session-${i}`, { uid: `uid-${i}` }, 24 * 3600);
    expect(await refreshTokens.find('alice')).toMatchObject({ grantId: 'grant-1' });
    expect(await sessions.findByUid('uid-0')).toMatchObject({ kind: 'Session' });
  });

  it('forgets an entry a day after its lifetime, keeping it that long for "expired" answers', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const codes = modelStore()('AuthorizationCode');
    await codes.upsert('code-1', { grantId: 'grant-1', kind: 'AuthorizationCode' }, 600);
    vi.advanceTimersByTime((600 + 24 * 3600 - 1) * 1000);
    expect(await codes.find('code-1')).toMatchObject({ grantId: 'grant-1' });
    vi.advanceTimersByTime(2_000);
    expect(await codes.find('code-1')).toBeUndefined();
  });
});
