/**
 * `taskstack start` as a new user's first run meets it: the command line as installed (its bundle), on
 * an empty data directory — nothing copied in, unlike the other tests' data directories.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOOPBACK, listen, probe } from '../core/http.ts';
import { startCli } from './test-support.ts';

// In a project of the user's own, as `--data-dir data` makes it.
const project = mkdtempSync(join(tmpdir(), 'taskstack-fresh-'));
const dir = join(project, 'data');
afterAll(() => rmSync(project, { recursive: true, force: true }));

describe('taskstack start on an empty data directory', () => {
  it('makes the directory’s CA and keys, serves HTTPS with them, and stops on Ctrl-C', async () => {
    const stack = await startCli(dir, '--free-ports', '--components', 'keyvault');
    const ca = readFileSync(join(dir, 'ca', 'ca.pem'), 'utf8');
    expect(ca).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(statSync(join(dir, 'ca', 'ca.json')).mode & 0o777).toBe(0o600);
    const vault = stack.description().endpoints.keyvault?.vault as string;
    // The vault answers an unauthenticated request with its challenge, over TLS the new CA vouches for.
    expect(await probe(`${vault}secrets?api-version=7.4`, { ca })).toBe(401);
    process.kill(-(stack.child.pid as number), 'SIGINT');
    expect(await stack.exited).toBe(0);
    expect(stack.output()).toContain('stopped.');
    expect(stack.output()).not.toContain('keys.json had no');
  });

  it('says which keys a damaged keys.json lacked and were made anew', async () => {
    const path = join(dir, 'keys.json');
    const { encryptionKey: _, ...kept } = JSON.parse(readFileSync(path, 'utf8'));
    writeFileSync(path, JSON.stringify(kept));
    const stack = await startCli(dir, '--free-ports', '--components', 'keyvault');
    process.kill(-(stack.child.pid as number), 'SIGINT');
    expect(await stack.exited).toBe(0);
    expect(stack.output()).toContain(
      `${path} had no encryptionKey: made new, so what the old key protected cannot be read`,
    );
  });

  it('keeps itself out of the git repository it is made in: keys, CA and state', () => {
    expect(statSync(join(dir, 'keys.json')).isFile()).toBe(true);
    execFileSync('git', ['init', '-q', project]);
    const untracked = execFileSync('git', ['-C', project, 'status', '--porcelain', '--untracked-files=all']);
    expect(untracked.toString()).toBe('');
  });

  it('gives the apps the stack’s identity, not the credential a developer’s shell names', async () => {
    // As in a shell signed in to the developer's own tenant (a service principal for Terraform, say).
    const env = {
      ...process.env,
      AZURE_TENANT_ID: '72f988bf-86f1-41af-91ab-2d7cd011db47',
      AZURE_CLIENT_ID: '0e9c6b1a-0000-4000-8000-000000000001',
      AZURE_CLIENT_SECRET: 'not-this',
    };
    const dataDir = join(project, 'signed-in-shell');
    // Only the function app and what its managetask reaches (every component gets the same environment).
    const components = 'identity,blob,cosmos,keyvault,functions';
    const stack = await startCli({ dataDir, env }, '--free-ports', '--components', components);
    try {
      const { baseUrl, functionKey } = JSON.parse(readFileSync(join(dataDir, 'stack.json'), 'utf8'));
      // Creating a task reads the encryption key from Key Vault with the app's managed identity.
      const created = await fetch(`${baseUrl}/api/managetask?code=${functionKey}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ Title: 'From a signed-in shell', Description: 'secret' }),
      });
      expect(created.status).toBe(200);
      expect(stack.output()).toContain(
        'stack     | not given to the apps, from this shell: AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET (in Azure an app has them only as its app settings: system/apps.json)',
      );
      expect(stack.output()).not.toContain('not-this');
    } finally {
      process.kill(-(stack.child.pid as number), 'SIGINT');
      expect(await stack.exited).toBe(0);
    }
  });

  it('starts behind a developer’s HTTP(S)_PROXY: the stack’s own requests to loopback never go to it', async () => {
    // A proxy that cannot reach this machine's loopback, as a company's: it refuses whatever reaches it.
    let reached = 0;
    const proxy = createServer((socket) => {
      reached += 1;
      socket.destroy();
    });
    const proxyUrl = `http://${LOOPBACK}:${await listen(proxy, 0)}`;
    const env = { ...process.env, HTTPS_PROXY: proxyUrl, HTTP_PROXY: proxyUrl, NO_PROXY: 'example.com' };
    try {
      // Azurite's containers are made through @azure/storage-blob, which reads the proxy settings.
      const stack = await startCli(
        { dataDir: join(project, 'behind-proxy'), env },
        '--free-ports',
        '--components',
        'blob',
      );
      process.kill(-(stack.child.pid as number), 'SIGINT');
      expect(await stack.exited).toBe(0);
      expect(reached).toBe(0);
    } finally {
      await new Promise((closed) => proxy.close(closed));
    }
  });
});
