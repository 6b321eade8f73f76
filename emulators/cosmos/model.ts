import { randomBytes, randomUUID } from 'node:crypto';

/** A stored document: the client's JSON plus the system properties Cosmos adds. */
export type Item = Record<string, unknown> & {
  id: string;
  _rid: string;
  _self: string;
  _etag: string;
  _ts: number;
};

export interface PartitionKeyDefinition {
  paths: string[];
  kind?: string;
  version?: number;
}

export type DatabaseResource = {
  id: string;
  _rid: string;
  _self: string;
  _etag: string;
  _ts: number;
} & Record<string, unknown>;
export type ContainerResource = DatabaseResource & { partitionKey: PartitionKeyDefinition };

export const newEtag = () => `"${randomUUID()}"`;

/**
 * Cosmos resource ids are a binary hierarchy (4 bytes database, +4 container, +8 document) in base64
 * with '-' for '/', so that they fit in `_self` paths.
 */
const encodeRid = (bytes: Buffer) => bytes.toString('base64').replaceAll('/', '-');
const decodeRid = (rid: string) => Buffer.from(rid.replaceAll('-', '/'), 'base64');
export const databaseRid = () => encodeRid(randomBytes(4));
export const containerRid = (dbRid: string) => encodeRid(Buffer.concat([decodeRid(dbRid), randomBytes(4)]));
export function itemRid(collRid: string, sequence: number): string {
  const tail = Buffer.alloc(8);
  tail.writeBigUInt64LE(BigInt(sequence));
  return encodeRid(Buffer.concat([decodeRid(collRid), tail]));
}

/** Splits a partition key path (`/a/b`, `/"odd name"`) into property names. */
export function pathParts(path: string): string[] {
  return path
    .split('/')
    .slice(1)
    .map((part) => (part.startsWith('"') && part.endsWith('"') ? part.slice(1, -1) : part));
}

/** The `{}` the SDK sends for a document that lacks its partition key property ("None"). */
const NONE = {};

/**
 * The document's partition key in the form of the `x-ms-documentdb-partitionkey` header (a JSON array),
 * normalised so the two compare as strings.
 */
export function partitionKeyOf(definition: PartitionKeyDefinition, body: Record<string, unknown>): string {
  return JSON.stringify(
    definition.paths.map((path) => {
      let value: unknown = body;
      for (const part of pathParts(path)) {
        value =
          value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
      }
      return value === undefined ? NONE : value;
    }),
  );
}

/** Normalises a header value the same way (the SDK escapes non-ASCII characters as \u sequences). */
export function normalizePartitionKey(header: string): string | undefined {
  try {
    const value: unknown = JSON.parse(header);
    return JSON.stringify(Array.isArray(value) ? value : [value]);
  } catch {
    return undefined;
  }
}
