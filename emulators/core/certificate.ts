import { createHash, createPublicKey, type KeyObject, sign, X509Certificate } from 'node:crypto';
import { isIPv4 } from 'node:net';

/**
 * Writes an X.509 v3 certificate signed with ECDSA P-256 and SHA-256, in DER as RFC 5280 lays it out.
 * Node can read certificates but not make them; a certificate library (ASN.1 schemas for every
 * extension there is) cost a fresh data directory's start ~350 ms of CPU for the four extensions the
 * local CA and its server certificate need.
 */
export interface CertificateFields {
  /** Hex digits of a positive serial number. */
  serial: string;
  subject: string;
  issuer: string;
  notBefore: Date;
  notAfter: Date;
  publicKey: KeyObject;
  signingKey: KeyObject;
  /** A CA that may sign end-entity certificates only (path length 0), or a TLS server certificate. */
  ca: boolean;
  /** The server certificate's names: IP addresses and DNS names. */
  altNames?: string[];
}

/** Tag, length, contents: one DER element. */
function tlv(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  const n = body.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
}

const sequence = (...items: Buffer[]) => tlv(0x30, ...items);
const explicit = (n: number, item: Buffer) => tlv(0xa0 + n, item);
const boolean = (value: boolean) => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
const octets = (value: Buffer) => tlv(0x04, value);
const bits = (value: Buffer, unusedBits = 0) => tlv(0x03, Buffer.from([unusedBits]), value);

function integer(hex: string): Buffer {
  let bytes = Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex');
  // A leading 1 bit would make it negative.
  if ((bytes[0] ?? 0) & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(0x02, bytes);
}

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let value = arc >> 7; value > 0; value >>= 7) base128.unshift((value & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime up to 2049, GeneralizedTime from 2050 on (RFC 5280 4.1.2.5), to the second. */
function time(date: Date): Buffer {
  const digits = date.toISOString().replace(/[-:T]|\.\d+/g, '');
  const year = date.getUTCFullYear();
  return year < 2050 ? tlv(0x17, Buffer.from(digits.slice(2))) : tlv(0x18, Buffer.from(digits));
}

/** A name of one common name (`CN=…`). */
function name(text: string): Buffer {
  const commonName = /^CN=(.+)$/.exec(text)?.[1];
  if (!commonName) throw new Error(`only CN=… names are supported, not ${text}`);
  return sequence(tlv(0x31, sequence(oid('2.5.4.3'), tlv(0x0c, Buffer.from(commonName, 'utf8')))));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octets(value));
}

/** Key usage bits, numbered as RFC 5280 4.2.1.3 numbers them (digitalSignature is 0). */
function keyUsage(...numbers: number[]): Buffer {
  const byte = numbers.reduce((value, n) => value | (0x80 >> n), 0);
  const unused = Math.min(...numbers.map((n) => 7 - n));
  return bits(Buffer.from([byte]), unused);
}

function ipAddress(text: string): Buffer {
  if (isIPv4(text)) return Buffer.from(text.split('.').map(Number));
  // IPv6, with at most one `::`.
  const [head = '', tail] = text.split('::');
  const groups = (part: string) => (part ? part.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail ?? '').length;
  const all = [...groups(head), ...Array(tail === undefined ? 0 : missing).fill('0'), ...groups(tail ?? '')];
  return Buffer.from(all.map((group) => group.padStart(4, '0')).join(''), 'hex');
}

/** RFC 5280 4.2.1.2's first method: SHA-1 of the public key's bits (for P-256, its uncompressed point). */
function keyIdentifier(key: KeyObject): Buffer {
  const { x = '', y = '' } = (key.type === 'public' ? key : createPublicKey(key)).export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(x, 'base64url'), Buffer.from(y, 'base64url')]);
  return createHash('sha1').update(point).digest();
}

const ECDSA_WITH_SHA256 = sequence(oid('1.2.840.10045.4.3.2'));

/** The certificate in PEM, checked by Node's own parser before it is handed out. */
export function createCertificate(fields: CertificateFields): string {
  // Key identifiers, which strict verifiers (OpenSSL's X509_STRICT, as Python 3.13 sets it) require.
  const identifiers = [
    extension('2.5.29.14', false, octets(keyIdentifier(fields.publicKey))),
    ...(fields.ca
      ? []
      : [extension('2.5.29.35', false, sequence(tlv(0x80, keyIdentifier(fields.signingKey))))]),
  ];
  const constraints = fields.ca
    ? [
        extension('2.5.29.19', true, sequence(boolean(true), integer('00'))),
        extension('2.5.29.15', true, keyUsage(5, 6)), // keyCertSign, cRLSign
      ]
    : [
        extension('2.5.29.19', true, sequence()),
        extension('2.5.29.15', true, keyUsage(0, 2)), // digitalSignature, keyEncipherment
        extension('2.5.29.37', false, sequence(oid('1.3.6.1.5.5.7.3.1'))), // serverAuth
        extension(
          '2.5.29.17',
          false,
          sequence(
            ...(fields.altNames ?? []).map((value) =>
              /^[\d.]+$|:/.test(value) ? tlv(0x87, ipAddress(value)) : tlv(0x82, Buffer.from(value, 'ascii')),
            ),
          ),
        ),
      ];
  const tbs = sequence(
    explicit(0, integer('02')), // v3
    integer(fields.serial),
    ECDSA_WITH_SHA256,
    name(fields.issuer),
    sequence(time(fields.notBefore), time(fields.notAfter)),
    name(fields.subject),
    fields.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...constraints, ...identifiers)),
  );
  const signature = sign('sha256', tbs, { key: fields.signingKey, dsaEncoding: 'der' });
  return new X509Certificate(sequence(tbs, ECDSA_WITH_SHA256, bits(signature))).toString();
}
