import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failure, seed, startVaultStack, type VaultTestStack } from './test-stack.ts';

let stack: VaultTestStack;
const notFound = (nameId: string) =>
  `A secret with (name/id) ${nameId} was not found in this key vault. If you recently deleted this secret you may be able to recover it using the correct recovery command. For help resolving this issue, please see https://go.microsoft.com/fwlink/?linkid=2125182`;

beforeAll(async () => {
  stack = await startVaultStack();
});
afterAll(() => stack?.stop());

describe('Key Vault through SecretClient', () => {
  it('serves the seeded secrets to an identity the topology grants Get', async () => {
    expect(stack.vault.endpoints.vault).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/$/);
    await stack.vault.health();
    const secret = await stack.client.getSecret('EncryptionKey');
    expect(secret.value).toBe(seed.EncryptionKey);
    expect(secret.properties).toMatchObject({
      enabled: true,
      recoveryLevel: 'Recoverable+Purgeable',
      recoverableDays: 90,
    });
    expect(secret.properties.id).toBe(
      `${stack.vault.endpoints.vault}secrets/EncryptionKey/${secret.properties.version}`,
    );
    // Names are case-insensitive, as in Key Vault.
    expect((await stack.client.getSecret('encryptionkey')).value).toBe(seed.EncryptionKey);
  });

  it('sets, gets latest and by version, lists and lists versions once granted Set', async () => {
    await stack.vault.actions?.setAccessPolicy?.({
      identity: 'functionApp',
      secrets: ['Get', 'List', 'Set', 'Delete', 'Purge', 'Recover'],
    });
    const before = Math.floor(stack.context.clock.now() / 1000);
    const first = await stack.client.setSecret('Greeting', 'hello', {
      contentType: 'text/plain',
      tags: { env: 'local' },
    });
    const second = await stack.client.setSecret('Greeting', 'hello again');
    expect(first.properties.createdOn?.getTime()).toBeGreaterThanOrEqual(before * 1000);
    expect(first.properties).toMatchObject({ contentType: 'text/plain', tags: { env: 'local' } });
    expect((await stack.client.getSecret('Greeting')).value).toBe('hello again');
    expect((await stack.client.getSecret('Greeting', { version: first.properties.version })).value).toBe(
      'hello',
    );
    const versions = [];
    for await (const properties of stack.client.listPropertiesOfSecretVersions('Greeting'))
      versions.push(properties.version);
    expect(versions).toEqual([first.properties.version, second.properties.version]);
    for (const name of ['Page-a', 'Page-b', 'Page-c']) await stack.client.setSecret(name, name);
    const pages: string[][] = [];
    for await (const page of stack.client.listPropertiesOfSecrets().byPage({ maxPageSize: 2 })) {
      pages.push(page.map((p) => p.name));
    }
    expect(pages.flat()).toEqual([
      'DocumentDbConnection',
      'EncryptionKey',
      'Greeting',
      'Page-a',
      'Page-b',
      'Page-c',
    ]);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 2]);
  });

  it('updates properties and refuses to read a disabled secret', async () => {
    const set = await stack.client.setSecret('Toggle', 'on');
    const updated = await stack.client.updateSecretProperties('Toggle', set.properties.version ?? '', {
      enabled: false,
    });
    expect(updated.enabled).toBe(false);
    expect(await failure(stack.client.getSecret('Toggle'))).toEqual({
      statusCode: 403,
      code: 'Forbidden',
      message: 'Operation get is not allowed on a disabled secret.',
    });
  });

  it('serves an expired or not yet valid secret, as Key Vault does (its dates are advice, not enforced)', async () => {
    const day = 86_400_000;
    const now = stack.context.clock.now();
    const expiresOn = new Date(Math.floor((now - day) / 1000) * 1000);
    const notBefore = new Date(Math.floor((now + day) / 1000) * 1000);
    await stack.client.setSecret('Dated', 'still here', { expiresOn, notBefore, contentType: 'text/plain' });
    expect(await stack.client.getSecret('Dated')).toMatchObject({
      value: 'still here',
      properties: { expiresOn, notBefore, contentType: 'text/plain', enabled: true },
    });
  });

  it('answers 404 SecretNotFound with Key Vault’s message', async () => {
    expect(await failure(stack.client.getSecret('Missing'))).toEqual({
      statusCode: 404,
      code: 'SecretNotFound',
      message: notFound('Missing'),
    });
    const version = '0123456789abcdef0123456789abcdef';
    expect(await failure(stack.client.getSecret('EncryptionKey', { version }))).toMatchObject({
      statusCode: 404,
      message: notFound(`EncryptionKey/${version}`),
    });
  });

  it('refuses an empty name, a bad one and a value over 25,600 characters in Key Vault’s words', async () => {
    // Recorded answer of the SDK's own tests (cannot create a secret with an empty name).
    expect(await failure(stack.client.setSecret('', 'v'))).toEqual({
      statusCode: 405,
      code: 'MethodNotAllowed',
      message: 'HTTP PUT not allowed',
    });
    expect(await failure(stack.client.setSecret('my_secret', 'v'))).toEqual({
      statusCode: 400,
      code: 'BadParameter',
      message: 'The request URI contains an invalid name: my_secret',
    });
    // The service's words, as az users (Azure/azure-cli#5639) and others quote them.
    expect(await failure(stack.client.setSecret('Big', 'x'.repeat(25_601)))).toEqual({
      statusCode: 400,
      code: 'BadParameter',
      message: 'Secret is beyond the maximum permitted length of 25600 characters.',
    });
    expect((await stack.client.setSecret('Big', 'x'.repeat(25_600))).value).toHaveLength(25_600);
  });

  it('lists no versions, rather than 404, for a secret that does not exist (as Key Vault answers)', async () => {
    const pages = [];
    for await (const page of stack.client.listPropertiesOfSecretVersions('NeverSet').byPage())
      pages.push(page);
    expect(pages).toEqual([[]]);
  });

  it('keeps every tag as sent, one named __proto__ too', async () => {
    const tags = JSON.parse('{"__proto__":"x","a":"b"}') as Record<string, string>;
    const set = await stack.client.setSecret('Tagged', 'v', { tags });
    expect(Object.entries(set.properties.tags ?? {})).toEqual([
      ['__proto__', 'x'],
      ['a', 'b'],
    ]);
    expect(Object.entries((await stack.client.getSecret('Tagged')).properties.tags ?? {})).toEqual([
      ['__proto__', 'x'],
      ['a', 'b'],
    ]);
    // Key Vault's limit is 15 tags; the 16th gets its terse answer, on set and on update alike.
    const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`t${i}`, 'v']));
    const tooMany = { statusCode: 400, code: 'BadParameter', message: 'Property has invalid value\r\n' };
    expect(await failure(stack.client.setSecret('Tagged', 'v', { tags: sixteen }))).toEqual(tooMany);
    expect(await failure(stack.client.updateSecretProperties('Tagged', '', { tags: sixteen }))).toEqual(
      tooMany,
    );
    const fifteen = Object.fromEntries(Object.entries(sixteen).slice(1));
    expect((await stack.client.setSecret('Tagged', 'v', { tags: fifteen })).properties.tags).toEqual(fifteen);
    const numeric = { a: 1 } as unknown as Record<string, string>;
    expect(await failure(stack.client.setSecret('Tagged', 'v', { tags: numeric }))).toMatchObject({
      statusCode: 400,
      code: 'BadParameter',
      message: 'tags: expected an object of string values',
    });
  });

  it("takes names that are also names of an object's own members (constructor, toString) as any other", async () => {
    for (const name of ['constructor', 'toString', 'hasOwnProperty']) {
      expect(await failure(stack.client.getSecret(name))).toMatchObject({
        statusCode: 404,
        message: notFound(name),
      });
      await stack.client.setSecret(name, `value of ${name}`);
      expect((await stack.client.getSecret(name.toUpperCase())).value).toBe(`value of ${name}`);
    }
  });

  it('soft-deletes: the poller completes, get says 404, the name is held until purged or recovered', async () => {
    await stack.client.setSecret('Doomed', 'v1');
    const deleted = await (
      await stack.client.beginDeleteSecret('Doomed', { intervalInMs: 10 })
    ).pollUntilDone();
    expect(deleted.recoveryId).toBe(`${stack.vault.endpoints.vault}deletedsecrets/Doomed`);
    expect(deleted.scheduledPurgeDate?.getTime()).toBe((deleted.deletedOn?.getTime() ?? 0) + 90 * 86_400_000);
    expect(await failure(stack.client.getSecret('Doomed'))).toMatchObject({
      statusCode: 404,
      code: 'SecretNotFound',
    });
    expect(await failure(stack.client.setSecret('Doomed', 'v2'))).toMatchObject({
      statusCode: 409,
      code: 'Conflict',
    });
    await (await stack.client.beginRecoverDeletedSecret('Doomed', { intervalInMs: 10 })).pollUntilDone();
    expect((await stack.client.getSecret('Doomed')).value).toBe('v1');
    await (await stack.client.beginDeleteSecret('Doomed', { intervalInMs: 10 })).pollUntilDone();
    await stack.client.purgeDeletedSecret('Doomed');
    expect(await failure(stack.client.getDeletedSecret('Doomed'))).toMatchObject({
      statusCode: 404,
      message: 'Deleted Secret not found: Doomed',
    });
    expect((await stack.client.setSecret('Doomed', 'v3')).value).toBe('v3');
  });

  it('answers recovering what is not deleted with SecretNotFound as for a secret, as Key Vault does', async () => {
    await stack.vault.actions?.setAccessPolicy?.({ identity: 'functionApp', secrets: ['Get', 'Recover'] });
    const recovering = stack.client.beginRecoverDeletedSecret('NeverDeleted', { intervalInMs: 10 });
    expect(await failure(recovering.then((poller) => poller.pollUntilDone()))).toEqual({
      statusCode: 404,
      code: 'SecretNotFound',
      message: notFound('NeverDeleted'),
    });
  });

  it('backs up a secret with all its versions and restores it once the name is free again', async () => {
    await stack.vault.actions?.setAccessPolicy?.({
      identity: 'functionApp',
      secrets: ['Get', 'List', 'Set', 'Delete', 'Purge', 'Backup', 'Restore'],
    });
    const first = await stack.client.setSecret('Saved', 'one', { contentType: 'text/plain' });
    const second = await stack.client.setSecret('Saved', 'two', { tags: { kept: 'yes' } });
    const backup = await stack.client.backupSecret('Saved');
    expect(backup).toBeInstanceOf(Uint8Array);
    expect(await failure(stack.client.restoreSecretBackup(backup ?? new Uint8Array()))).toMatchObject({
      statusCode: 409,
      code: 'Conflict',
    });
    await (await stack.client.beginDeleteSecret('Saved', { intervalInMs: 10 })).pollUntilDone();
    await stack.client.purgeDeletedSecret('Saved');
    const restored = await stack.client.restoreSecretBackup(backup ?? new Uint8Array());
    expect(restored).toMatchObject({
      name: 'Saved',
      version: second.properties.version,
      tags: { kept: 'yes' },
      createdOn: second.properties.createdOn,
    });
    expect((await stack.client.getSecret('Saved')).value).toBe('two');
    const old = await stack.client.getSecret('Saved', { version: first.properties.version });
    expect(old).toMatchObject({ value: 'one', properties: { contentType: 'text/plain' } });
    expect(await failure(stack.client.backupSecret('Unknown'))).toEqual({
      statusCode: 404,
      code: 'SecretNotFound',
      message: notFound('Unknown'),
    });
    // `secrets/restore` is also a secret's name like any other.
    await stack.client.setSecret('restore', 'a secret named restore');
    expect((await stack.client.getSecret('restore')).value).toBe('a secret named restore');
    // Key Vault's own answer to bytes that are no backup (its code has spaces).
    expect(await failure(stack.client.restoreSecretBackup(new Uint8Array(4728)))).toEqual({
      statusCode: 400,
      code: 'Malformed backup blob',
      message: 'Backup blob contains invalid or corrupt version.',
    });
  });

  it('answers 403 Forbidden once set-policy takes Get away, and serves again when given back', async () => {
    const app = stack.context.secrets.identities.functionApp;
    await stack.vault.actions?.setAccessPolicy?.({ identity: 'functionApp', secrets: ['List'] });
    try {
      const error = await failure(stack.client.getSecret('EncryptionKey'));
      expect(error).toMatchObject({ statusCode: 403, code: 'Forbidden' });
      expect(error.message).toBe(
        `The user, group or application 'appid=${app?.clientId};oid=${app?.principalId};iss=https://sts.windows.net/${stack.context.secrets.tenantId}/' does not have secrets get permission on key vault '${new URL(`${stack.vault.endpoints.vault}`).host};location=local'. For help resolving this issue, please see https://go.microsoft.com/fwlink/?linkid=2125287`,
      );
      const rawForbidden = await stack.raw('secrets/EncryptionKey?api-version=7.4');
      expect(rawForbidden.body?.error?.innererror).toEqual({ code: 'ForbiddenByPolicy' });
    } finally {
      await stack.vault.actions?.setAccessPolicy?.({
        identity: 'functionApp',
        secrets: ['Get', 'List', 'Set', 'Delete'],
      });
    }
    expect((await stack.client.getSecret('EncryptionKey')).value).toBe(seed.EncryptionKey);
    await expect(
      stack.vault.actions?.setAccessPolicy?.({ identity: 'nobody', secrets: ['Get'] }),
    ).rejects.toThrow(/unknown identity/);
  });
});
