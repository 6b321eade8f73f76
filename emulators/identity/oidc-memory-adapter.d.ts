/** oidc-provider's own in-memory adapter module, which its type package does not describe. */
declare module 'oidc-provider/lib/adapters/memory_adapter.js' {
  import type { Adapter, AdapterPayload } from 'oidc-provider';
  /** The map it keeps its entries in (get/set with an optional maxAge in milliseconds/delete). */
  interface Storage {
    get(key: string): unknown;
    set(key: string, value: unknown, options?: { maxAge?: number }): unknown;
    delete(key: string): unknown;
  }
  export default class MemoryAdapter implements Adapter {
    constructor(model: string, store?: Storage, clockTolerance?: number);
    upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<undefined>;
    find(id: string): Promise<AdapterPayload | undefined>;
    findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
    findByUid(uid: string): Promise<AdapterPayload | undefined>;
    consume(id: string): Promise<undefined>;
    destroy(id: string): Promise<undefined>;
    revokeByGrantId(grantId: string): Promise<undefined>;
  }
}
