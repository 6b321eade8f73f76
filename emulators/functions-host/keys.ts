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
    /** After the host's keys are written (set, renewed or deleted): stack.json names two of them. */
    private readonly hostKeysChanged: () => void = () => {},
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
  async set(target: KeyTarget & { value?: string }): Promise<{ name: string; value: string }> {
    const { name, value } = await this.put(target);
    return { name, value };
  }

  /**
   * `set`, saying whether the key is new, as the runtime's SecretManager does (`OperationResult.Created`
   * or `Updated`): names match in any case, and a key replaced takes the name as given. The master key
   * counts as created when its value is generated, updated when one is given (`SetMasterKeyAsync`).
   */
  async put(
    target: KeyTarget & { value?: string },
  ): Promise<{ name: string; value: string; created: boolean }> {
    const value = target.value ?? generateKey();
    this.#digests.clear();
    if (target.fn) {
      const secrets = await this.function(target.fn);
      const created = upsert(secrets.keys, target.name, value);
      await this.store.write(target.fn.toLowerCase(), JSON.stringify(secrets, null, 2));
      return { name: target.name, value, created };
    }
    const host = await this.host();
    const keyType = target.keyType ?? 'functionKeys';
    let created = target.value === undefined;
    if (keyType === 'masterKey') host.masterKey.value = value;
    else created = upsert(host[keyType], target.name, value);
    await this.store.write('host', JSON.stringify(host, null, 2));
    this.hostKeysChanged();
    return { name: keyType === 'masterKey' ? 'master' : target.name, value, created };
  }

  /** Removes a function key, host function key or system key (never the master key); false if there is none. */
  async delete(target: KeyTarget & { keyType?: 'functionKeys' | 'systemKeys' }): Promise<boolean> {
    const [name, secrets] = target.fn
      ? [target.fn.toLowerCase(), await this.function(target.fn)]
      : ['host', await this.host()];
    const keys = 'keys' in secrets ? secrets.keys : secrets[target.keyType ?? 'functionKeys'];
    const index = keys.findIndex((key) => sameName(key.name, target.name));
    if (index < 0) return false;
    keys.splice(index, 1);
    this.#digests.clear();
    await this.store.write(name, JSON.stringify(secrets, null, 2));
    if (!target.fn) this.hostKeysChanged();
    return true;
  }

  /** One scope's keys in their order: a function's, or the host's function keys or system keys. */
  async named(
    scope: { fn: string } | { keyType: 'functionKeys' | 'systemKeys' },
  ): Promise<{ name: string; value: string }[]> {
    const keys = 'fn' in scope ? (await this.function(scope.fn)).keys : (await this.host())[scope.keyType];
    return keys.map(({ name, value }) => ({ name, value }));
  }

  /**
   * The level a key grants outside any function, as the runtime's `GetAuthorizationLevelAsync` finds it:
   * the master key is admin, a system key system, a host function key function; anything else none.
   */
  async level(presented: string | undefined): Promise<'admin' | 'system' | 'function' | 'anonymous'> {
    if (!presented) return 'anonymous';
    const host = await this.host();
    const values = (keys: Key[]) => keys.map((key) => key.value);
    // Every group is compared, whichever matches first, so the answer's timing does not tell which.
    const admin = this.#matchesAny(presented, [host.masterKey.value]);
    const system = this.#matchesAny(presented, values(host.systemKeys));
    const fn = this.#matchesAny(presented, values(host.functionKeys));
    return admin ? 'admin' : system ? 'system' : fn ? 'function' : 'anonymous';
  }
}

interface KeyTarget {
  fn?: string;
  keyType?: KeyType;
  name: string;
}

/** Key names match in any case, as the runtime's `ScriptSecrets.GetFunctionKey` matches them. */
const sameName = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** Replaces a key of that name (which then takes the name as given, and goes last), or adds one; true if added. */
function upsert(keys: Key[], name: string, value: string): boolean {
  const index = keys.findIndex((key) => sameName(key.name, name));
  if (index >= 0) keys.splice(index, 1);
  keys.push({ name, value, encrypted: false });
  return index < 0;
}
