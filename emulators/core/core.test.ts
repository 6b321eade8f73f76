// @peculiar/x509 (an independent reader of the CA's certificates) needs the reflect polyfill first.
import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import * as x509 from '@peculiar/x509';
import { afterAll, describe, expect, it } from 'vitest';
import { loadApps } from './apps.ts';
import { loadTls } from './ca.ts';
import { checkShifts, LATEST_STACK_TIME, StackClock } from './clock.ts';
import { writeFileAtomic } from './files.ts';
import { bypassProxyForLoopback, close, createTlsServer, LOOPBACK, listen, probe } from './http.ts';
import { loadSecrets, openSecrets } from './secrets.ts';
import { loadTopology } from './topology.ts';

const DAY = 86_400_000;
const dirs: (() => void)[] = [];
/** An empty data directory (testDataDir() would copy in the test run's shared CA). */
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'taskstack-core-'));
  dirs.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};
afterAll(() => {
  for (const remove of dirs) remove();
});

describe('the stack clock', () => {
  it('only moves forward, and maps real timestamps to the stack time they happened at', () => {
    const clock = new StackClock();
    const before = Date.now();
    expect(() => clock.advance(-1)).toThrow(RangeError);
    clock.advance(DAY);
    const since = clock.shifts.at(-1)?.since as number;
    expect(since).toBeGreaterThanOrEqual(before);
    // Read in this order, real time first, so that no time passing in between can fail it.
    const real = Date.now();
    expect(clock.now()).toBeGreaterThanOrEqual(real + DAY);
    // Something written before the move happened a day "earlier" than something written after it.
    expect(clock.toStackTime(before - 1)).toBe(before - 1);
    expect(clock.toStackTime(since - 1)).toBe(since - 1);
    expect(clock.toStackTime(since)).toBe(since + DAY);
    expect(new StackClock(clock.shifts).offsetMs).toBe(DAY);
  });

  it('fires `at` when the clock is moved past the moment, not before', () => {
    const clock = new StackClock();
    let fired = 0;
    clock.at(clock.now() + 5 * 60_000, () => fired++);
    clock.advance(60_000);
    expect(fired).toBe(0);
    clock.advance(4 * 60_000);
    expect(fired).toBe(1);
    clock.advance(DAY);
    expect(fired).toBe(1);
  });

  it('takes any number of waits without a leak warning (a host has one per timer and per feed range)', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const clock = new StackClock();
      const cancels = Array.from({ length: 50 }, () => clock.at(clock.now() + DAY, () => {}));
      // Node emits its warnings on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
      for (const cancel of cancels) cancel();
      expect(clock.listenerCount('change')).toBe(0);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('a developer’s proxy settings', () => {
  it('gain loopback in NO_PROXY, in both spellings, keeping the developer’s own entries once each', () => {
    const env = bypassProxyForLoopback({
      HTTPS_PROXY: 'http://proxy:3128',
      no_proxy: 'corp.example, 127.0.0.1,',
    });
    expect(env.HTTPS_PROXY).toBe('http://proxy:3128');
    expect(env.NO_PROXY).toBe('corp.example,127.0.0.1,localhost');
    expect(env.no_proxy).toBe(env.NO_PROXY);
  });
});

describe('the local CA', () => {
  it('is created once per data directory, with a server certificate for loopback and a private key kept private', async () => {
    const dir = freshDir();
    const first = await loadTls(dir);
    const again = await loadTls(dir);
    expect(again).toEqual(first);
    expect(statSync(join(dir, 'ca', 'ca.json')).mode & 0o777).toBe(0o600);
    expect((await loadTls(freshDir())).ca).not.toBe(first.ca);
  });

  it('writes ca.pem again when it is missing or damaged: every stack process trusts that file', async () => {
    const dir = freshDir();
    const { ca, caPath } = await loadTls(dir);
    writeFileSync(caPath, 'garbage\n');
    expect((await loadTls(dir)).ca).toBe(ca);
    expect(readFileSync(caPath, 'utf8')).toBe(ca);
    rmSync(caPath);
    await loadTls(dir);
    expect(readFileSync(caPath, 'utf8')).toBe(ca);
  });

  // Read back by two parsers that are not ours: @peculiar/x509 and the openssl CLI.
  it('writes certificates that an independent parser and openssl read as a CA and a TLS server certificate it signed', async () => {
    const hosts = Array.from({ length: 12 }, (_, i) => `compose-service-${i}.taskstack.internal`);
    const dir = freshDir();
    const tls = await loadTls(dir, hosts);
    const ca = new x509.X509Certificate(tls.ca);
    const server = new x509.X509Certificate(tls.cert);
    expect(ca.subject).toBe('CN=taskstack local CA');
    expect(ca.issuer).toBe(ca.subject);
    expect(server.issuer).toBe(ca.subject);
    expect(server.subject).toBe('CN=taskstack local');
    expect(await ca.verify({ publicKey: ca.publicKey, signatureOnly: true })).toBe(true);
    expect(await server.verify({ publicKey: ca.publicKey, signatureOnly: true })).toBe(true);
    const caLimits = ca.getExtension(x509.BasicConstraintsExtension);
    expect([caLimits?.ca, caLimits?.pathLength, caLimits?.critical]).toEqual([true, 0, true]);
    expect(ca.getExtension(x509.KeyUsagesExtension)?.usages).toBe(
      x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
    );
    expect(server.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false);
    expect(server.getExtension(x509.KeyUsagesExtension)?.usages).toBe(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
    );
    expect(server.getExtension(x509.ExtendedKeyUsageExtension)?.usages).toEqual([
      x509.ExtendedKeyUsage.serverAuth,
    ]);
    expect(server.getExtension(x509.SubjectAlternativeNameExtension)?.names.toJSON()).toEqual([
      { type: 'ip', value: '127.0.0.1' },
      { type: 'ip', value: '::1' },
      { type: 'dns', value: 'localhost' },
      ...hosts.map((value) => ({ type: 'dns', value })),
    ]);
    expect(server.notAfter.getTime() - Date.now()).toBeGreaterThan(360 * DAY);
    const caId = ca.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
    expect(caId).toBe(Buffer.from(await ca.publicKey.getKeyIdentifier('SHA-1')).toString('hex'));
    expect(server.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(caId);

    const certPath = join(dir, 'server.pem');
    writeFileSync(certPath, tls.cert);
    const verify = spawnSync(
      'openssl',
      ['verify', '-x509_strict', '-purpose', 'sslserver', '-CAfile', tls.caPath, certPath],
      {
        encoding: 'utf8',
      },
    );
    expect(verify.stdout.trim()).toBe(`${certPath}: OK`);
  });

  it('re-issues the server certificate a week before it expires, signed by the same CA', async () => {
    const dir = freshDir();
    const first = await loadTls(dir);
    const path = join(dir, 'ca', 'ca.json');
    const stored = JSON.parse(readFileSync(path, 'utf8'));
    writeFileSync(
      path,
      JSON.stringify({ ...stored, certNotAfter: new Date(Date.now() + 6 * DAY).toISOString() }),
    );
    const renewed = await loadTls(dir);
    expect(renewed.ca).toBe(first.ca);
    expect(renewed.cert).not.toBe(first.cert);
    expect(renewed.key).not.toBe(first.key);
    const ca = new x509.X509Certificate(renewed.ca);
    expect(
      await new x509.X509Certificate(renewed.cert).verify({ publicKey: ca.publicKey, signatureOnly: true }),
    ).toBe(true);
  });
});

describe('keys per data directory', () => {
  const topology = loadTopology();

  it('are generated once, kept with mode 0600, and differ between data directories', async () => {
    const dir = freshDir();
    const first = await loadSecrets(dir, topology);
    expect(await loadSecrets(dir, topology)).toEqual(first);
    expect(statSync(join(dir, 'keys.json')).mode & 0o777).toBe(0o600);
    expect(Buffer.byteLength(first.encryptionKey, 'utf8')).toBe(32);
    expect(Object.keys(first.identities).sort()).toEqual(Object.keys(topology.identities).sort());
    const other = await loadSecrets(freshDir(), topology);
    expect(other.cosmosKey).not.toBe(first.cosmosKey);
    expect(other.identities.functionApp?.principalId).not.toBe(first.identities.functionApp?.principalId);
  });

  it('store the shared keys at once and the signing key once made, which later loads keep', async () => {
    const dir = freshDir();
    const { secrets, signingKey } = openSecrets(dir, topology);
    const stored = () => JSON.parse(readFileSync(join(dir, 'keys.json'), 'utf8'));
    expect(stored()).toEqual(secrets);
    expect(stored().signingKey).toBeUndefined();
    const key = await signingKey;
    expect(key).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(stored()).toEqual({ ...secrets, signingKey: key });
    expect(await loadSecrets(dir, topology)).toEqual({ ...secrets, signingKey: key });
  });

  it('take a user-given EncryptionKey over the generated one, and keep everything else', async () => {
    const dir = freshDir();
    const generated = await loadSecrets(dir, topology);
    const given = await loadSecrets(dir, topology, 'my own key');
    expect(given.encryptionKey).toBe('my own key');
    expect({ ...given, encryptionKey: generated.encryptionKey }).toEqual(generated);
  });

  it('name the keys a damaged keys.json lacked, which they made anew; none on a first start', async () => {
    const dir = freshDir();
    const first = openSecrets(dir, topology);
    expect(first.renewed).toEqual([]);
    const { encryptionKey, cosmosKey, ...kept } = { ...first.secrets, signingKey: await first.signingKey };
    writeFileSync(join(dir, 'keys.json'), JSON.stringify(kept));
    const again = openSecrets(dir, topology);
    expect(again.renewed).toEqual(['cosmosKey', 'encryptionKey']);
    expect(again.secrets.encryptionKey).not.toBe(encryptionKey);
    expect(again.secrets.cosmosKey).not.toBe(cosmosKey);
    expect(openSecrets(dir, topology).renewed).toEqual([]);
    // A given EncryptionKey lacks nothing; nor does a signing key not made yet (a start ended before it).
    const {
      encryptionKey: _,
      signingKey: __,
      ...noKeys
    } = { ...again.secrets, signingKey: await again.signingKey };
    writeFileSync(join(dir, 'keys.json'), JSON.stringify(noKeys));
    const last = openSecrets(dir, topology, 'my own key');
    expect(last.renewed).toEqual([]);
    await last.signingKey;
  });
});

describe('a hand-edited keys.json', () => {
  const topology = loadTopology();

  it.each([
    ['a number for a key', { storageKey: 5 }, 'storageKey: Invalid input: expected string, received number'],
    ['an empty key', { masterKey: '' }, 'masterKey: Too small: expected string to have >=1 characters'],
    [
      "an identity's field",
      { identities: { functionApp: { principalId: 'p', clientId: 'c' } } },
      'identities.functionApp.header: Invalid input: expected string, received undefined',
    ],
  ])('with %s is refused, naming the field and keeping the file', async (_, edit, problem) => {
    const dir = freshDir();
    const stored = { ...(await loadSecrets(dir, topology)) };
    const path = join(dir, 'keys.json');
    const edited = JSON.stringify(Array.isArray(edit) ? edit : { ...stored, ...edit });
    writeFileSync(path, edited);
    expect(() => openSecrets(dir, topology)).toThrow(
      new Error(`${path}: ${problem}; correct it, or remove the entry to have a new key made`),
    );
    expect(readFileSync(path, 'utf8')).toBe(edited);
  });

  it('that is no object is refused as a whole', () => {
    const dir = freshDir();
    const path = join(dir, 'keys.json');
    writeFileSync(path, '[]');
    expect(() => openSecrets(dir, topology)).toThrow(
      new Error(
        `${path}: Invalid input: expected object, received array; correct it, or remove the file to have new keys made`,
      ),
    );
  });
});

describe('clock history from clock.json', () => {
  it('keeps the sound prefix of a damaged history and says what it dropped', () => {
    const sound = [
      { since: 1, offsetMs: 0 },
      { since: 2, offsetMs: 60_000 },
    ];
    expect(checkShifts(sound)).toEqual({ shifts: sound });
    expect(checkShifts('Unexpected end of JSON input')).toEqual({
      shifts: [],
      problem: 'it is not a list of clock shifts',
    });
    for (const bad of [
      { since: 3, offsetMs: 1e300 },
      { since: 3, offsetMs: 8.64e15 },
      { since: 3, offsetMs: 1_000 }, // backwards
      { since: 0, offsetMs: 120_000 }, // out of order
      { since: 'x', offsetMs: 120_000 },
      null,
    ]) {
      const checked = checkShifts([...sound, bad, { since: 4, offsetMs: 120_000 }]);
      expect(checked.shifts, JSON.stringify(bad)).toEqual(sound);
      expect(checked.problem).toBe(`shift 3 of 4 is invalid: ${JSON.stringify(bad)}`);
    }
  });

  it('never moves past the end of year 9999', () => {
    const clock = new StackClock();
    expect(() => clock.advance(LATEST_STACK_TIME)).toThrow(
      'the stack clock cannot go past 9999-12-31T23:59:59.999Z',
    );
    expect(clock.offsetMs).toBe(0);
    clock.advance(LATEST_STACK_TIME - Date.now() - 60_000);
    expect(clock.date().getUTCFullYear()).toBe(9999);
  });
});

describe('probe, the health checks’ client', () => {
  it('answers the status of one request over HTTP or HTTPS (trusting the CA it is given), without following redirects', async () => {
    const tls = await loadTls(freshDir());
    const seen: string[] = [];
    const answer = (req: IncomingMessage, res: ServerResponse) => {
      seen.push(`${req.method} ${req.url}`);
      if (req.url === '/moved') res.writeHead(302, { location: '/elsewhere' }).end();
      else res.writeHead(req.method === 'OPTIONS' ? 200 : 401).end('a body nobody reads');
    };
    const plain = createServer(answer);
    const secure = createTlsServer(tls, {}, answer);
    const [plainPort, securePort] = [await listen(plain, 0), await listen(secure, 0)];
    try {
      expect(await probe(`http://${LOOPBACK}:${plainPort}/moved`)).toBe(302);
      expect(await probe(`https://${LOOPBACK}:${securePort}/x?y=1`, { ca: tls.ca })).toBe(401);
      expect(await probe(`https://${LOOPBACK}:${securePort}/`, { method: 'OPTIONS', ca: tls.ca })).toBe(200);
      expect(seen).toEqual(['GET /moved', 'GET /x?y=1', 'OPTIONS /']);
      // Verification stays on: a CA it was not given is refused.
      await expect(
        probe(`https://${LOOPBACK}:${securePort}/`, { ca: (await loadTls(freshDir())).ca }),
      ).rejects.toThrow();
    } finally {
      await Promise.all([close(plain), close(secure as unknown as Server)]);
    }
    // Nothing listening: an error, not a hang.
    await expect(probe(`http://${LOOPBACK}:${plainPort}/`)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('serves over TLS a client that offers only HTTP/1.0 (curl --http1.0)', async () => {
    const tls = await loadTls(freshDir());
    const secure = createTlsServer(tls, {}, (_req, res) => res.end('hello'));
    const port = await listen(secure, 0);
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect({
          host: LOOPBACK,
          port,
          ca: tls.ca,
          servername: 'localhost',
          ALPNProtocols: ['http/1.0'],
        });
        let text = '';
        socket.on('secureConnect', () => socket.end('GET / HTTP/1.0\r\nHost: x\r\n\r\n'));
        socket.on('data', (chunk: Buffer) => {
          text += chunk;
        });
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nhello$/);
    } finally {
      await close(secure as unknown as Server);
    }
  });
});

describe('writeFileAtomic', () => {
  it('leaves no temp file behind when the write fails, and the old file as it was', () => {
    const dir = freshDir();
    // A directory where the file should go: the final rename fails, as a full disk fails the write.
    mkdirSync(join(dir, 'state.json', 'inside'), { recursive: true });
    expect(() => writeFileAtomic(join(dir, 'state.json'), '{}')).toThrow();
    expect(readdirSync(dir)).toEqual(['state.json']);
    expect(readdirSync(join(dir, 'state.json'))).toEqual(['inside']);
  });
});

describe('apps.json', () => {
  it('refuses a setting name App Service would not take (letters, digits, periods and underscores only), naming it', () => {
    const path = join(freshDir(), 'apps.json');
    const app = { kind: 'webapp', folder: 'system/web', localPort: 5000 };
    for (const name of ['AzureAd:Instance', 'my-setting', 'two words']) {
      writeFileSync(path, JSON.stringify({ apps: { web: { ...app, settings: { [name]: 'x' } } } }));
      expect(() => loadApps(path)).toThrow(
        `${path}: app web: setting name ${JSON.stringify(name)} is not one App Service takes: letters, digits, periods and underscores only (a configuration section's AzureAd:Instance is AzureAd__Instance)`,
      );
    }
    writeFileSync(
      path,
      JSON.stringify({
        apps: { web: { ...app, settings: { 'AzureWebJobs.F.Disabled': 'x', A__B_1: 'y' } } },
      }),
    );
    expect(Object.keys(loadApps(path).web?.settings ?? {})).toEqual(['AzureWebJobs.F.Disabled', 'A__B_1']);
  });
});
