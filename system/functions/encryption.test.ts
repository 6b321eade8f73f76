/**
 * Description encryption: the key rule, interop with an independent implementation (the openssl CLI)
 * in both directions, random IVs, and a key the rule cannot turn into 32 bytes.
 */
import { execFileSync } from 'node:child_process';
import { CosmosClient } from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decrypt, encrypt, keyFromSecret } from './src/lib/encryption.ts';
import { type AppStack, answer, startAppStack } from './test-support.ts';

/** Shorter than 32 characters: the rule pads it with spaces. */
const SHORT_KEY = 'short key';
const ruleKeyHex = Buffer.from(SHORT_KEY.padEnd(32, ' ')).toString('hex');

const openssl = (args: string[], input: Buffer) => execFileSync('openssl', args, { input });

describe('the key rule', () => {
  it('pads with spaces to 32 characters and cuts at 32', () => {
    expect(keyFromSecret('abc').toString()).toBe(`abc${' '.repeat(29)}`);
    expect(keyFromSecret('k'.repeat(40)).toString()).toBe('k'.repeat(32));
  });

  it.each([
    ['non-ASCII characters in the first 32', 'clé'],
    ['a surrogate pair cut at 32', `${'a'.repeat(31)}😀`],
  ])('refuses a key with %s, naming the byte count but never the key', (_, secret) => {
    expect(() => keyFromSecret(secret)).toThrow(
      /^EncryptionKey is unusable: its first 32 characters are \d+ bytes/,
    );
    try {
      keyFromSecret(secret);
    } catch (error) {
      expect((error as Error).message).not.toContain(secret);
    }
  });

  it('ignores non-ASCII characters after the 32nd (they are cut off)', () => {
    expect(keyFromSecret(`${'a'.repeat(32)}é`)).toHaveLength(32);
  });

  it('encrypts one text differently each time, and decrypts both', () => {
    const key = keyFromSecret(SHORT_KEY);
    const [a, b] = [encrypt('same', key), encrypt('same', key)];
    expect(a).not.toBe(b);
    expect([decrypt(a, key), decrypt(b, key)]).toEqual(['same', 'same']);
  });
});

describe('through the function app', () => {
  let app: AppStack;
  let cosmos: CosmosClient;
  beforeAll(async () => {
    app = await startAppStack({ encryptionKey: SHORT_KEY });
    cosmos = new CosmosClient(app.stack.description.connections.DocumentDbConnection ?? '');
  });
  afterAll(async () => {
    cosmos?.dispose();
    await app?.stop();
  });

  const create = async (Description: string) => {
    const response = await fetch(app.url('managetask'), {
      method: 'POST',
      body: JSON.stringify({ Title: 'interop', Description }),
    });
    return (await response.json()) as { id: string; Description: string };
  };

  it('stores a Description that openssl decrypts with the rule key and the prepended IV', async () => {
    const plain = 'Ünïcode and more than one block of text, to be sure.';
    const created = await create(plain);
    const { resource } = await cosmos
      .database('TasksDB')
      .container('Tasks')
      .item(created.id, created.id)
      .read();
    expect(resource?.Description).toBe(created.Description);
    const bytes = Buffer.from(created.Description, 'base64');
    const iv = bytes.subarray(0, 16).toString('hex');
    const out = openssl(['enc', '-d', '-aes-256-cbc', '-K', ruleKeyHex, '-iv', iv], bytes.subarray(16));
    expect(out.toString('utf8')).toBe(plain);
  });

  it('decrypts a Description that openssl encrypted', async () => {
    const iv = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
    const cipher = openssl(
      ['enc', '-aes-256-cbc', '-K', ruleKeyHex, '-iv', iv.toString('hex')],
      Buffer.from('from openssl ✓'),
    );
    const id = crypto.randomUUID();
    await cosmos
      .database('TasksDB')
      .container('Tasks')
      .items.create({
        id,
        Title: 'outside',
        Description: Buffer.concat([iv, cipher]).toString('base64'),
        DueDate: null,
      });
    const read = await (await fetch(app.url('managetask', { taskId: id }))).json();
    expect(read).toEqual({ id, Title: 'outside', Description: 'from openssl ✓', DueDate: null });
  });

  it('gives two encryptions of one text different stored forms', async () => {
    const [a, b] = [await create('twice'), await create('twice')];
    expect(a.Description).not.toBe(b.Description);
  });
});

describe('an EncryptionKey the rule cannot use', () => {
  const KEY = 'clé de chiffrement';
  let app: AppStack;
  beforeAll(async () => {
    app = await startAppStack({
      encryptionKey: KEY,
      components: ['identity', 'cosmos', 'keyvault', 'blob', 'functions'],
    });
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('fails the POST with an empty 500, writes nothing, and logs why without the key', async () => {
    const cosmos = new CosmosClient(app.stack.description.connections.DocumentDbConnection ?? '');
    const { database } = await cosmos.databases.createIfNotExists({ id: 'TasksDB' });
    const { container } = await database.containers.createIfNotExists({ id: 'Tasks', partitionKey: '/id' });
    const response = await fetch(app.url('managetask'), {
      method: 'POST',
      body: JSON.stringify({ Title: 'never stored', Description: 'x' }),
    });
    expect(await answer(response)).toEqual({ status: 500, contentType: null, body: '' });
    const entry = await app.waitForLog((e) => e.message.includes('EncryptionKey is unusable'));
    expect(entry.message).toBe(
      'ManageTask: creating the task failed: EncryptionKey is unusable: its first 32 characters are 33 bytes as UTF-8; AES-256 needs exactly 32 (use ASCII characters only)',
    );
    const { resources } = await container.items.query('SELECT VALUE COUNT(1) FROM c').fetchAll();
    expect(resources).toEqual([0]);
    cosmos.dispose();
    expect(app.allLogText()).not.toContain(KEY);
  });
});
