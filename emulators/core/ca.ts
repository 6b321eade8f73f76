import { webcrypto } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type * as X509 from '@peculiar/x509';
import { readJsonIfExists, writeFileAtomic } from './files.ts';

/** PEM material every HTTPS emulator serves with, and the CA certificate every client trusts. */
export interface TlsMaterial {
  /** The local CA certificate: give it to clients (`NODE_EXTRA_CA_CERTS`). */
  ca: string;
  /** Server certificate for 127.0.0.1, ::1 and localhost, signed by the CA. */
  cert: string;
  key: string;
}

interface StoredCa extends TlsMaterial {
  caKey: string;
  certNotAfter: string;
}

const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;

/**
 * @peculiar/x509, loaded only to make a certificate: its ASN.1 schemas are most of what a start (or any
 * `taskstack` command) would otherwise load, and a data directory's certificates are made once a year.
 */
let x509: typeof X509;
async function loadX509(): Promise<void> {
  // It resolves its ASN.1 schemas through tsyringe, which needs the reflect polyfill first.
  await import('reflect-metadata');
  // A CommonJS package: its exports object is the default export wherever it is loaded from (bundled or not).
  x509 = ((await import('@peculiar/x509')) as unknown as { default: typeof X509 }).default;
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
}

const pemKey = async (key: CryptoKey) =>
  x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');

async function importKey(pem: string): Promise<CryptoKey> {
  const der = x509.PemConverter.decode(pem)[0];
  if (!der) throw new Error('the local CA key is unreadable');
  return webcrypto.subtle.importKey('pkcs8', der, algorithm, true, ['sign']);
}

async function issueServerCert(caCert: X509.X509Certificate, caKey: CryptoKey, hosts: string[]) {
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const notAfter = new Date(Date.now() + 365 * DAY);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: webcrypto
      .getRandomValues(new Uint8Array(8))
      .reduce((s, b) => s + b.toString(16).padStart(2, '0'), '01'),
    subject: 'CN=taskstack local',
    issuer: caCert.subject,
    notBefore: new Date(Date.now() - DAY),
    notAfter,
    signingAlgorithm: algorithm,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'ip', value: '127.0.0.1' },
        { type: 'ip', value: '::1' },
        { type: 'dns', value: 'localhost' },
        ...hosts.map((value) => ({ type: 'dns' as const, value })),
      ]),
    ],
  });
  return {
    cert: cert.toString('pem'),
    key: await pemKey(keys.privateKey),
    certNotAfter: notAfter.toISOString(),
  };
}

async function createCa(hosts: string[]): Promise<StoredCa> {
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=taskstack local CA',
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 10 * 365 * DAY),
    signingAlgorithm: algorithm,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  const server = await issueServerCert(caCert, keys.privateKey, hosts);
  return { ca: caCert.toString('pem'), caKey: await pemKey(keys.privateKey), ...server };
}

/**
 * Returns the data directory's CA and server certificate, creating the CA once and re-issuing the
 * server certificate when it comes within a week of expiry. Private keys are written with mode 0600.
 * `hosts`: further DNS names for the certificate (docker-compose's service names).
 */
export async function loadTls(
  dataDir: string,
  hosts: string[] = [],
): Promise<TlsMaterial & { caPath: string }> {
  const path = join(dataDir, 'ca', 'ca.json');
  const caPath = join(dataDir, 'ca', 'ca.pem');
  let stored = readJsonIfExists<StoredCa>(path);
  let changed = true;
  if (!stored) {
    await loadX509();
    stored = await createCa(hosts);
  } else if (Date.parse(stored.certNotAfter) - Date.now() < 7 * DAY) {
    await loadX509();
    stored = {
      ...stored,
      ...(await issueServerCert(new x509.X509Certificate(stored.ca), await importKey(stored.caKey), hosts)),
    };
  } else {
    changed = false;
  }
  if (changed || !existsSync(caPath)) {
    writeFileAtomic(path, JSON.stringify(stored, null, 2));
    writeFileAtomic(caPath, stored.ca, 0o644);
  }
  return { ca: stored.ca, cert: stored.cert, key: stored.key, caPath };
}
