import { createPrivateKey, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createCertificate } from './certificate.ts';
import { readJsonIfExists, readTextIfExists, writeFileAtomic } from './files.ts';

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

const DAY = 86_400_000;
const CA_NAME = 'CN=taskstack local CA';

const newKeys = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });
const pemKey = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString();

function issueServerCert(caKey: KeyObject, hosts: string[]) {
  const keys = newKeys();
  const notAfter = new Date(Date.now() + 365 * DAY);
  const cert = createCertificate({
    serial: `01${randomBytes(8).toString('hex')}`,
    subject: 'CN=taskstack local',
    issuer: CA_NAME,
    notBefore: new Date(Date.now() - DAY),
    notAfter,
    publicKey: keys.publicKey,
    signingKey: caKey,
    ca: false,
    altNames: ['127.0.0.1', '::1', 'localhost', ...hosts],
  });
  return { cert, key: pemKey(keys.privateKey), certNotAfter: notAfter.toISOString() };
}

function createCa(hosts: string[]): StoredCa {
  const keys = newKeys();
  const ca = createCertificate({
    serial: '01',
    subject: CA_NAME,
    issuer: CA_NAME,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 10 * 365 * DAY),
    publicKey: keys.publicKey,
    signingKey: keys.privateKey,
    ca: true,
  });
  return { ca, caKey: pemKey(keys.privateKey), ...issueServerCert(keys.privateKey, hosts) };
}

/** The data directory's CA certificate, which HTTPS clients of its stack trust (NODE_EXTRA_CA_CERTS). */
export const caFile = (dataDir: string) => join(dataDir, 'ca', 'ca.pem');

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
  const caPath = caFile(dataDir);
  let stored = readJsonIfExists<StoredCa>(path);
  let changed = true;
  if (!stored) {
    stored = createCa(hosts);
  } else if (Date.parse(stored.certNotAfter) - Date.now() < 7 * DAY) {
    stored = { ...stored, ...issueServerCert(createPrivateKey(stored.caKey), hosts) };
  } else {
    changed = false;
  }
  // ca.pem is what every stack process trusts (openSslTrust): one missing or damaged is written again.
  if (changed || readTextIfExists(caPath) !== stored.ca) {
    writeFileAtomic(path, JSON.stringify(stored, null, 2));
    writeFileAtomic(caPath, stored.ca, 0o644);
  }
  return { ca: stored.ca, cert: stored.cert, key: stored.key, caPath };
}

/**
 * How a stack process trusts the CA in `env.NODE_EXTRA_CA_CERTS` (the launcher's, or a test's): as
 * OpenSSL's certificate file under Node's `--use-openssl-ca`, with public roots from the system's
 * certificate directory (SSL_CERT_DIR, or OpenSSL's default), read only when a chain needs one.
 * NODE_EXTRA_CA_CERTS itself makes Node 20 parse its 144 bundled root certificates before it runs any
 * code, ~40 ms of CPU in every process (a process without it does the same at its first TLS context).
 */
export function openSslTrust(env: NodeJS.ProcessEnv): { execArgv: string[]; env: NodeJS.ProcessEnv } {
  const { NODE_EXTRA_CA_CERTS: caPath, ...rest } = env;
  return { execArgv: ['--use-openssl-ca'], env: caPath ? { ...rest, SSL_CERT_FILE: caPath } : rest };
}
