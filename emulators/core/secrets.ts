import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { z } from 'zod';
import { readJsonIfExists, writeFileAtomic } from './files.ts';
import type { Topology } from './topology.ts';

/** One system-assigned managed identity of an app. */
export interface IdentitySecrets {
  principalId: string;
  clientId: string;
  /** The app's IDENTITY_HEADER: proves to the managed-identity endpoint which app is asking. */
  header: string;
}

/** An app registration's credentials: its application (client) id, secret, and object ids. */
export interface ApplicationSecrets {
  clientId: string;
  clientSecret: string;
  /** The service principal's object id: the `oid` of tokens the app gets for itself. */
  principalId: string;
}

/** A test user's object id and password. */
export interface UserSecrets {
  objectId: string;
  password: string;
}

/** The directory's generated half: by the topology's application and user names. */
export interface DirectorySecrets {
  applications: Record<string, ApplicationSecrets>;
  users: Record<string, UserSecrets>;
  /** Signs the sign-in provider's session cookies. */
  cookieKey: string;
}

/** Keys generated once per data directory (`keys.json`, mode 0600). Never logged. */
export interface StackSecrets {
  tenantId: string;
  storageKey: string;
  cosmosKey: string;
  eventHubsKey: string;
  functionKey: string;
  masterKey: string;
  /** The Functions host's `eventgrid_extension` system key, which Event Grid deliveries carry. */
  eventGridExtensionKey: string;
  /** Access key of the Event Grid topic(s). */
  eventGridKey: string;
  /** Primary key of the gateway's All-APIs subscription (stack.json's subscriptionKey). */
  subscriptionKey: string;
  /** The gateway derives every other subscription key from this (gateway-sim/subscriptions.ts). */
  gatewayKeySeed: string;
  encryptionKey: string;
  /** Private JWK (RS256) the identity emulator signs tokens with; others verify with its public half. */
  signingKey: JWK;
  identities: Record<string, IdentitySecrets>;
  directory: DirectorySecrets;
}

const azureKey = () => randomBytes(64).toString('base64');
const functionsKey = () => randomBytes(40).toString('base64url');
/** 32 ASCII characters: exactly the 32 UTF-8 bytes the spec's key rule expects. */
const aesKeyText = () => randomBytes(24).toString('base64url');

/** Everything but the signing key: cheap, so generated on every load and used only where missing. */
function randomSecrets(topology: Topology): Omit<StackSecrets, 'signingKey'> {
  return {
    tenantId: randomUUID(),
    storageKey: azureKey(),
    cosmosKey: azureKey(),
    eventHubsKey: randomBytes(32).toString('base64'),
    eventGridKey: randomBytes(32).toString('base64'),
    functionKey: functionsKey(),
    masterKey: functionsKey(),
    eventGridExtensionKey: functionsKey(),
    subscriptionKey: randomBytes(16).toString('hex'),
    gatewayKeySeed: randomBytes(32).toString('base64url'),
    encryptionKey: aesKeyText(),
    identities: Object.fromEntries(
      Object.keys(topology.identities).map((name) => [
        name,
        { principalId: randomUUID(), clientId: randomUUID(), header: randomBytes(24).toString('base64url') },
      ]),
    ),
    directory: {
      applications: Object.fromEntries(
        Object.keys(topology.directory.applications).map((name) => [
          name,
          // 40 characters, as long as the secrets Entra generates.
          {
            clientId: randomUUID(),
            clientSecret: randomBytes(30).toString('base64url'),
            principalId: randomUUID(),
          },
        ]),
      ),
      users: Object.fromEntries(
        Object.keys(topology.directory.users).map((name) => [
          name,
          { objectId: randomUUID(), password: `Tt1-${randomBytes(12).toString('base64url')}` },
        ]),
      ),
      cookieKey: randomBytes(32).toString('base64url'),
    },
  };
}

const text = z.string().min(1);

/**
 * keys.json as read, checked: a hand edit that left a key a number or empty broke a component's start
 * far from its cause (`blob failed to start: Invalid AccountKey …`). Refused naming the field; a key
 * that is missing is made anew by the caller.
 */
function checkStored(
  path: string,
  stored: unknown,
  fresh: Omit<StackSecrets, 'signingKey'>,
): StackSecrets | undefined {
  if (stored === undefined) return undefined;
  const named = (names: string[]) => z.object(Object.fromEntries(names.map((name) => [name, text])));
  const keys = Object.keys(fresh).filter((name) => typeof fresh[name as keyof typeof fresh] === 'string');
  const schema = z.looseObject({
    ...named(keys).partial().shape,
    identities: z.record(z.string(), named(['principalId', 'clientId', 'header'])).optional(),
    directory: z
      .looseObject({
        applications: z.record(z.string(), named(['clientId', 'clientSecret', 'principalId'])).optional(),
        users: z.record(z.string(), named(['objectId', 'password'])).optional(),
        cookieKey: text.optional(),
      })
      .optional(),
    signingKey: z.looseObject(named(['kty', 'n', 'e', 'd', 'kid']).shape).optional(),
  });
  const checked = schema.safeParse(stored);
  if (checked.success) return stored as StackSecrets;
  const [issue] = checked.error.issues;
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  // Removed, an entry is made anew; the whole file too (every key then new).
  const remedy = where ? 'remove the entry to have a new key made' : 'remove the file to have new keys made';
  throw new Error(`${path}: ${where}${issue?.message}; correct it, or ${remedy}`);
}

/** Made on libuv's threads: the caller's thread goes on meanwhile. */
async function newSigningKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

/** Every key but the identity provider's signing key: what the stack's wiring is made of. */
export type SharedSecrets = Omit<StackSecrets, 'signingKey'>;

/** What a component is given: the shared keys, and the signing key if it is the identity provider. */
export type ComponentSecrets = SharedSecrets & Partial<Pick<StackSecrets, 'signingKey'>>;

/**
 * Loads the data directory's keys, generating them on first use. Identities added to the topology
 * later get keys without disturbing the existing ones; a user-given EncryptionKey always wins. The
 * signing key, an RSA key (100–500 ms of CPU to make), comes later when there is none yet, and is
 * stored once made: the launcher forks its components meanwhile.
 */
export function openSecrets(
  dataDir: string,
  topology: Topology,
  encryptionKey?: string,
): { secrets: SharedSecrets; signingKey: Promise<JWK>; renewed: string[] } {
  const path = join(dataDir, 'keys.json');
  const fresh = randomSecrets(topology);
  const stored = checkStored(path, readJsonIfExists(path), fresh);
  // Keys an existing keys.json lacks (edited by hand, or cut) are made anew, which the caller says: what
  // the old ones protected (the Descriptions EncryptionKey encrypted, signed sessions) stays unreadable.
  const given = (name: string) => name === 'encryptionKey' && encryptionKey !== undefined;
  const renewed = stored
    ? Object.entries(fresh)
        .filter(([name, value]) => typeof value === 'string' && !(name in stored) && !given(name))
        .map(([name]) => name)
    : [];
  const { signingKey: storedKey, ...kept } = stored ?? {};
  const secrets: SharedSecrets = {
    ...fresh,
    ...kept,
    identities: { ...fresh.identities, ...stored?.identities },
    directory: {
      cookieKey: stored?.directory?.cookieKey ?? fresh.directory.cookieKey,
      applications: { ...fresh.directory.applications, ...stored?.directory?.applications },
      users: { ...fresh.directory.users, ...stored?.directory?.users },
    },
  };
  if (encryptionKey !== undefined) secrets.encryptionKey = encryptionKey;
  const save = (signingKey: JWK | undefined) => {
    const all = { ...secrets, signingKey };
    if (JSON.stringify(all) !== JSON.stringify(stored)) writeFileAtomic(path, JSON.stringify(all, null, 2));
  };
  save(storedKey);
  if (storedKey) return { secrets, signingKey: Promise.resolve(storedKey), renewed };
  const signingKey = newSigningKey().then((key) => {
    save(key);
    return key;
  });
  // No signing key yet is no loss: a start may have ended before it was made.
  return { secrets, signingKey, renewed };
}

/** The data directory's keys (openSecrets), the signing key included. */
export async function loadSecrets(
  dataDir: string,
  topology: Topology,
  encryptionKey?: string,
): Promise<StackSecrets> {
  const { secrets, signingKey } = openSecrets(dataDir, topology, encryptionKey);
  return { ...secrets, signingKey: await signingKey };
}

/** The secret web apps sign their cookies with: one-way from the master key, so per data directory. */
export function sessionSecret(secrets: Pick<StackSecrets, 'masterKey'>): string {
  return createHash('sha256').update(`session:${secrets.masterKey}`).digest('base64url');
}
