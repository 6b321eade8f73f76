/**
 * The manage variant's Description encryption: AES-256-CBC with PKCS#7 padding, a random 16-byte IV
 * prepended to the ciphertext, Base64 of both — the form the original .NET service stores.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const KEY_CHARS = 32;
const IV_BYTES = 16;

/**
 * The spec's key rule: the secret's text right-padded with spaces to 32 characters, cut to 32, taken
 * as UTF-8. Characters are UTF-16 code units, as .NET counts them. A text with non-ASCII characters
 * then gives more than 32 bytes (or a broken surrogate pair); AES-256 cannot use that, and any repair
 * (cutting bytes, hashing) would encrypt with a key other than the rule's, so it fails instead.
 * The message never includes the key.
 */
export function keyFromSecret(secret: string): Buffer {
  const key = Buffer.from(secret.padEnd(KEY_CHARS, ' ').slice(0, KEY_CHARS), 'utf8');
  if (key.length !== KEY_CHARS) {
    throw new Error(
      `EncryptionKey is unusable: its first ${KEY_CHARS} characters are ${key.length} bytes as UTF-8; AES-256 needs exactly ${KEY_CHARS} (use ASCII characters only)`,
    );
  }
  return key;
}

export function encrypt(plain: string, key: Buffer): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-cbc', key, iv);
  return Buffer.concat([iv, cipher.update(plain, 'utf8'), cipher.final()]).toString('base64');
}

export function decrypt(stored: string, key: Buffer): string {
  const bytes = Buffer.from(stored, 'base64');
  if (bytes.length < IV_BYTES * 2) throw new Error('the stored Description is not IV + ciphertext');
  const decipher = createDecipheriv('aes-256-cbc', key, bytes.subarray(0, IV_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES)), decipher.final()]).toString('utf8');
}
