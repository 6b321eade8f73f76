/**
 * Secret backups: what `backupSecret` hands out and `restoreSecretBackup` takes back. Key Vault's blob
 * is opaque and encrypted; this one is a marked, base64url JSON copy of the secret with every version
 * (not encrypted: it never leaves the machine), checked in full before anything is written.
 */
import { z } from 'zod';
import { malformedBackup } from './errors.ts';
import { SECRET_NAME, tags } from './requests.ts';
import type { SecretRecord } from './store.ts';

const MARK = 'TaskstackKeyVaultSecretBackupV1.';

const version = z.object({
  version: z.string().regex(/^[0-9a-f]{32}$/),
  value: z.string(),
  contentType: z.string().optional(),
  tags: tags.optional(),
  enabled: z.boolean(),
  nbf: z.number().int().optional(),
  exp: z.number().int().optional(),
  created: z.number().int(),
  updated: z.number().int(),
});
const record = z.object({ name: z.string().regex(SECRET_NAME), versions: z.array(version).min(1) });

export function encodeBackup({ name, versions }: SecretRecord): Buffer {
  return Buffer.from(MARK + Buffer.from(JSON.stringify({ name, versions })).toString('base64url'));
}

export function decodeBackup(blob: Buffer): SecretRecord {
  const text = blob.toString('utf8');
  if (!text.startsWith(MARK)) throw malformedBackup();
  try {
    const parsed = record.safeParse(JSON.parse(Buffer.from(text.slice(MARK.length), 'base64url').toString()));
    if (parsed.success) return parsed.data;
  } catch {}
  throw malformedBackup();
}
