import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { readJsonIfExists, writeFileAtomic } from './files.ts';
import type { Topology } from './topology.ts';

/** One system-assigned managed identity of an app. */
export interface IdentitySecrets {
  principalId: string;
  clientId: string;
  /** The app's IDENTITY_HEADER: proves to the managed-identity endpoint which app is asking. */
  header: string;
}

/** Keys generated once per data directory (`keys.json`, mode 0600). Never logged. */
export interface StackSecrets {
  tenantId: string;
  storageKey: string;
  cosmosKey: string;
  eventHubsKey: string;
  functionKey: string;
  masterKey: string;
  subscriptionKey: string;
  encryptionKey: string;
  /** Private JWK (RS256) the identity emulator signs tokens with; others verify with its public half. */
  signingKey: JWK;
  identities: Record<string, IdentitySecrets>;
}

const azureKey = () => randomBytes(64).toString('base64');
const functionsKey = () => randomBytes(40).toString('base64url');
/** 32 ASCII characters: exactly the 32 UTF-8 bytes the spec's key rule expects. */
const aesKeyText = () => randomBytes(24).toString('base64url');

async function generate(topology: Topology, encryptionKey?: string): Promise<StackSecrets> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
  return {
    tenantId: randomUUID(),
    storageKey: azureKey(),
    cosmosKey: azureKey(),
    eventHubsKey: randomBytes(32).toString('base64'),
    functionKey: functionsKey(),
    masterKey: functionsKey(),
    subscriptionKey: randomBytes(16).toString('hex'),
    encryptionKey: encryptionKey ?? aesKeyText(),
    signingKey,
    identities: Object.fromEntries(
      Object.keys(topology.identities).map((name) => [
        name,
        { principalId: randomUUID(), clientId: randomUUID(), header: randomBytes(24).toString('base64url') },
      ]),
    ),
  };
}

/**
 * Loads the data directory's keys, generating them on first use. Identities added to the topology
 * later get keys without disturbing the existing ones; a user-given EncryptionKey always wins.
 */
export async function loadSecrets(
  dataDir: string,
  topology: Topology,
  encryptionKey?: string,
): Promise<StackSecrets> {
  const path = join(dataDir, 'keys.json');
  const stored = readJsonIfExists<StackSecrets>(path);
  const complete =
    stored?.signingKey !== undefined &&
    Object.keys(topology.identities).every((name) => stored.identities?.[name]);
  // Generating an RSA key costs ~100 ms: only do it when something is missing.
  const fresh = complete ? undefined : await generate(topology, encryptionKey);
  const secrets: StackSecrets =
    stored && fresh
      ? { ...fresh, ...stored, identities: { ...fresh.identities, ...stored.identities } }
      : ((stored ?? fresh) as StackSecrets);
  if (encryptionKey !== undefined) secrets.encryptionKey = encryptionKey;
  if (JSON.stringify(secrets) !== JSON.stringify(stored))
    writeFileAtomic(path, JSON.stringify(secrets, null, 2));
  return secrets;
}
