/** Reading what clients send the vault: JSON bodies, path segments, skip tokens. */
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { BodyTooLargeError, readBody } from '../core/http.ts';
import * as err from './errors.ts';
import type { SecretInput, SecretProperties } from './vault.ts';

/**
 * Key Vault's limit on a secret value. Its answer says characters, its documentation 25 KB; counted
 * here in UTF-8 bytes, the stricter of the two for a value that is not ASCII.
 */
const MAX_VALUE_BYTES = 25 * 1024;
/** Room for the value JSON-escaped plus tags and attributes. */
const MAX_BODY_BYTES = 256 * 1024;

/** Key Vault's rule for secret names. */
export const SECRET_NAME = /^[0-9a-zA-Z-]{1,127}$/;

const attributes = z.object({ enabled: z.boolean(), nbf: z.number().int(), exp: z.number().int() }).partial();
/** Tag names are free text, `__proto__` too, which zod's record would drop: checked, and kept as sent. */
export const tags = z.custom<Record<string, string>>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => typeof v === 'string'),
  'expected an object of string values',
);
const propertiesBody = z.object({
  contentType: z.string().optional(),
  tags: tags.optional(),
  attributes: attributes.optional(),
});
const secretBody = propertiesBody.extend({ value: z.string() });
const backupBody = z.object({ value: z.string() });

export async function jsonBody(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type'];
  if (type !== undefined && !/^application\/json\s*(;|$)/i.test(type)) throw err.unsupportedMediaType(type);
  let text: string;
  try {
    text = (await readBody(req, MAX_BODY_BYTES)).toString('utf8');
  } catch (error) {
    if (error instanceof BodyTooLargeError) throw err.requestTooLarge();
    throw error;
  }
  if (text.trim() === '') throw err.badParameter('The request body is missing.');
  try {
    return JSON.parse(text);
  } catch {
    throw err.badParameter('The request body is not valid JSON.');
  }
}

export function secretInput(body: unknown): SecretInput {
  const parsed = secretBody.safeParse(body);
  if (!parsed.success) throw err.badParameter(describe(parsed.error));
  if (Buffer.byteLength(parsed.data.value) > MAX_VALUE_BYTES) {
    throw err.secretTooLarge(MAX_VALUE_BYTES);
  }
  return { value: parsed.data.value, ...flatten(parsed.data) };
}

/** The backup blob `restoreSecretBackup` sends, base64url as the SDK encodes it. */
export function backupInput(body: unknown): Buffer {
  const parsed = backupBody.safeParse(body);
  if (!parsed.success) throw err.badParameter(describe(parsed.error));
  return Buffer.from(parsed.data.value, 'base64url');
}

export function props(body: unknown): SecretProperties {
  const parsed = propertiesBody.safeParse(body);
  if (!parsed.success) throw err.badParameter(describe(parsed.error));
  return flatten(parsed.data);
}

/** Key Vault's limit on a secret's tags. */
const MAX_TAGS = 15;

function flatten({ contentType, tags, attributes }: z.infer<typeof propertiesBody>): SecretProperties {
  // Key Vault's own words for a 16th tag, line break and all (as terraform's and Azure's users quote it).
  if (tags && Object.keys(tags).length > MAX_TAGS) throw err.badParameter('Property has invalid value\r\n');
  return { contentType, tags, ...attributes };
}

const describe = (error: z.ZodError) =>
  error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ');

export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw err.invalidName(segment);
  }
}

/** Key Vault's skip tokens are base64 JSON naming where the next page starts; ours too. */
export const encodeSkipToken = (marker: string) =>
  Buffer.from(JSON.stringify({ NextMarker: marker, TargetLocation: 0 })).toString('base64url');

export function decodeSkipToken(token: string | null): string | undefined {
  if (token === null) return undefined;
  try {
    const marker = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')).NextMarker;
    if (typeof marker === 'string') return marker;
  } catch {}
  throw err.badParameter('The skip token is not valid.');
}
