/**
 * The host's keys, in the runtime's own document shapes: host secrets (master key, host function keys,
 * system keys) and per-function secrets. Missing documents are created on first use, as the runtime
 * does; the first master key, `default` host key and `eventgrid_extension` system key are the stack's
 * (so stack.json and the Event Grid emulator know them).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { keyDigest } from '../core/compare.ts';
import type { SecretsStore } from './keys-store.ts';

interface Key {
  name: string;
  value: string;
  encrypted: boolean;
}

interface Common {
  hostName: string | null;
  instanceId: string;
  source: 'runtime';
  decryptionKeyId: string;
}

interface HostSecrets extends Common {
  masterKey: Key;
  functionKeys: Key[];
  systemKeys: Key[];
}

interface FunctionSecrets extends Common {
  keys: Key[];
}

export type KeyType = 'functionKeys' | 'systemKeys' | 'masterKey';
export type AuthLevel = 'anonymous' | 'function' | 'admin';

/** The runtime's key format is opaque random text; 40 random bytes, URL-safe. */
export const generateKey = () => randomBytes(40).toString('base64url');

export class KeyManager {
  #host: Promise<HostSecrets> | undefined;
  #functions = new Map<string, Promise<FunctionSecrets>>();
  /** The keys' digests by key value, worked out once rather than per request (emptied when a key is replaced). */
  #digests = new Map<string, Buffer>();
  readonly #common: Common;

  constructor(
    private readonly store: SecretsStore,
    private readonly seed: { masterKey: string; functionKey: string; eventGridExtensionKey: string },
    instanceId: string,
  ) {
    this.#common = { hostName: null, instanceId, source: 'runtime', decryptionKeyId: '' };
  }

  #load<T>(name: string, create: () => T): Promise<T> {
    return this.store.read(name).then(async (text) => {
      if (text !== undefined) return JSON.parse(text) as T;
      const fresh = create();
      await this.store.write(name, JSON.stringify(fresh, null, 2));
      return fresh;
    });
  }

  host(): Promise<HostSecrets> {
    this.#host ??= this.#load<HostSecrets>('host', () => ({
      masterKey: { name: 'master', value: this.seed.masterKey, encrypted: false },
      functionKeys: [{ name: 'default', value: this.seed.functionKey, encrypted: false }],
      systemKeys: [{ name: 'eventgrid_extension', value: this.seed.eventGridExtensionKey, encrypted: false }],
      ...this.#common,
    })).catch((error) => {
      this.#host = undefined;
      throw error;
    });
    return this.#host;
  }

  function(name: string): Promise<FunctionSecrets> {
    const id = name.toLowerCase();
    let secrets = this.#functions.get(id);
    if (!secrets) {
      secrets = this.#load<FunctionSecrets>(id, () => ({
        keys: [{ name: 'default', value: generateKey(), encrypted: false }],
        ...this.#common,
      })).catch((error) => {
        this.#functions.delete(id);
        throw error;
      });
      this.#functions.set(id, secrets);
    }
    return secrets;
  }

  /** Constant-time membership: every candidate is compared, whichever matches. */
  #matchesAny(presented: string, candidates: string[]): boolean {
    const digest = keyDigest(presented);
    let matched = false;
    for (const candidate of candidates) {
      let expected = this.#digests.get(candidate);
      if (!expected) {
        expected = keyDigest(candidate);
        this.#digests.set(candidate, expected);
      }
      if (timingSafeEqual(digest, expected)) matched = true;
    }
    return matched;
  }

  /** Creates the named system key if missing (an extension asks for its key at start, as Event Grid does). */
  async ensureSystemKey(name: string): Promise<void> {
    const host = await this.host();
    if (host.systemKeys.some((key) => key.name === name)) return;
    host.systemKeys.push({ name, value: generateKey(), encrypted: false });
    await this.store.write('host', JSON.stringify(host, null, 2));
  }

  /** Whether `presented` may call a function of `level` (`fn` names the function for function keys). */
  async authorize(level: AuthLevel, presented: string | undefined, fn?: string): Promise<boolean> {
    if (level === 'anonymous') return true;
    if (!presented) return false;
    const host = await this.host();
    const candidates = [host.masterKey.value];
    if (level === 'function') {
      candidates.push(...host.functionKeys.map((key) => key.value));
      if (fn) candidates.push(...(await this.function(fn)).keys.map((key) => key.value));
    }
    return this.#matchesAny(presented, candidates);
  }

  /** Whether `presented` is the named system key (or the master key, which opens everything). */
  async authorizeSystem(name: string, presented: string | undefined): Promise<boolean> {
    if (!presented) return false;
    const host = await this.host();
    const system = host.systemKeys.filter((key) => key.name === name).map((key) => key.value);
    return this.#matchesAny(presented, [host.masterKey.value, ...system]);
  }

  /** Like `az functionapp function keys list` (a function) or `az functionapp keys list` (the host). */
  async list(fn?: string): Promise<Record<string, unknown>> {
    const named = (keys: Key[]) => Object.fromEntries(keys.map((key) => [key.name, key.value]));
    if (fn) return named((await this.function(fn)).keys);
    const host = await this.host();
    return {
      functionKeys: named(host.functionKeys),
      masterKey: host.masterKey.value,
      systemKeys: named(host.systemKeys),
    };
  }

  /** Creates or replaces a key (a generated value when none is given); returns it as `az` prints it. */
  async set(target: {
    fn?: string;
    keyType?: KeyType;
    name: string;
    value?: string;
  }): Promise<{ name: string; value: string }> {
    const value = target.value ?? generateKey();
    this.#digests.clear();
    if (target.fn) {
      const secrets = await this.function(target.fn);
      upsert(secrets.keys, target.name, value);
      await this.store.write(target.fn.toLowerCase(), JSON.stringify(secrets, null, 2));
      return { name: target.name, value };
    }
    const host = await this.host();
    const keyType = target.keyType ?? 'functionKeys';
    if (keyType === 'masterKey') host.masterKey.value = value;
    else upsert(host[keyType], target.name, value);
    await this.store.write('host', JSON.stringify(host, null, 2));
    return { name: keyType === 'masterKey' ? 'master' : target.name, value };
  }
}

function upsert(keys: Key[], name: string, value: string) {
  const existing = keys.find((key) => key.name === name);
  if (existing) existing.value = value;
  else keys.push({ name, value, encrypted: false });
}
