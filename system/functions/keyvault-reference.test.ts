/**
 * DocumentDbConnection is a Key Vault reference, locally as in Azure: the functions host resolves it with
 * the app's identity before the app starts. When the vault refuses the identity, the app gets the
 * reference text, the host's log says which setting and why (never a value), and ManageTask, which reads
 * the vault itself, answers the empty 500 of the spec's row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppStack, answer, startAppStack } from './test-support.ts';

describe('a Key Vault reference the vault refuses at the host start', () => {
  let app: AppStack;
  beforeAll(async () => {
    app = await startAppStack();
    await app.stack.action('keyvault', 'setAccessPolicy', { identity: 'functionApp', secrets: [] });
    // A configuration change restarts the app, which resolves its references again.
    await app.stack.stopComponent('functions');
    await app.stack.startComponent('functions');
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('logs why DocumentDbConnection was not resolved, with no secret value, and ManageTask answers an empty 500', async () => {
    await app.waitForLog((entry) =>
      entry.message.includes('Key Vault reference in app setting DocumentDbConnection was not resolved'),
    );
    const logs = app.allLogText();
    expect(logs).toContain(
      'Key Vault reference in app setting DocumentDbConnection was not resolved: the vault answered 403 Forbidden for the secret DocumentDbConnection',
    );
    for (const secret of Object.values(app.stack.description.secrets)) expect(logs).not.toContain(secret);
    expect(await answer(await fetch(app.url('managetask', { taskId: 'any' })))).toEqual({
      status: 500,
      contentType: null,
      body: '',
    });
  });
});

describe('the references the launcher gives', () => {
  let app: AppStack;
  beforeAll(async () => {
    app = await startAppStack({
      settings: {
        // Either syntax; a secret the vault does not have stays the reference text.
        VaultByUri: '@Microsoft.KeyVault(SecretUri=https://taskstack.vault.azure.net/secrets/EncryptionKey/)',
        NoSuchSecret: '@Microsoft.KeyVault(VaultName=taskstack;SecretName=NoSuchSecret)',
      },
    });
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('resolve at start; a missing secret is named in the log, and the app still serves', async () => {
    await app.waitForLog((entry) =>
      entry.message.includes(
        'Key Vault reference in app setting NoSuchSecret was not resolved: the vault answered 404 SecretNotFound for the secret NoSuchSecret',
      ),
    );
    expect(app.allLogText()).not.toContain('app setting VaultByUri was not resolved');
    expect(app.allLogText()).not.toContain('app setting DocumentDbConnection was not resolved');
    expect((await fetch(app.url('managetask', { taskId: 'unknown' }))).status).toBe(404);
  });
});
