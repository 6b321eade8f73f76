import { importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawGet } from '../core/testing.ts';
import { seed, startVaultStack, type VaultTestStack } from './test-stack.ts';

let stack: VaultTestStack;
const token = async () => (await stack.credential.getToken('https://vault.azure.net/.default')).token;

beforeAll(async () => {
  stack = await startVaultStack();
  await stack.vault.actions?.setAccessPolicy?.({ identity: 'functionApp', secrets: ['Get', 'List', 'Set'] });
});
afterAll(() => stack?.stop());

describe('Key Vault on the wire', () => {
  it('challenges an unauthenticated request', async () => {
    const response = await stack.raw('secrets/EncryptionKey?api-version=7.4', {}, false);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer authorization="${stack.idp.endpoints.authority}/${stack.context.secrets.tenantId}", resource="https://vault.azure.net"`,
    );
    expect(response.body).toEqual({
      error: { code: 'Unauthorized', message: 'AKV10000: Request is missing a Bearer or PoP token.' },
    });
  });

  it("refuses a token for another audience, another tenant's, a forged one, and garbage", async () => {
    const storageToken = (await stack.credential.getToken('https://storage.azure.com/.default')).token;
    const { signingKey, tenantId } = stack.context.secrets;
    const otherTenant = 'https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/';
    const now = Math.floor(Date.now() / 1000);
    const otherTenantToken = await new SignJWT({ oid: 'x', tid: 'y', appid: 'z' })
      .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid })
      .setIssuer(otherTenant)
      .setAudience('https://vault.azure.net')
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(await importJWK(signingKey, 'RS256'));
    const cases: [string, string][] = [
      [
        storageToken,
        'AKV10022: Invalid audience. Expected https://vault.azure.net, found: https://storage.azure.com.',
      ],
      [
        otherTenantToken,
        `AKV10032: Invalid issuer. Expected one of https://sts.windows.net/${tenantId}/, ${stack.idp.endpoints.issuer}, found ${otherTenant}.`,
      ],
      [`${(await token()).slice(0, -4)}AAAA`, 'Error validating token: IDX10501'],
      ['garbage', 'Error validating token: IDX14100'],
    ];
    for (const [bearer, message] of cases) {
      const response = await stack.raw(
        'secrets?api-version=7.4',
        { headers: { authorization: `Bearer ${bearer}` } },
        false,
      );
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toContain('resource="https://vault.azure.net"');
      expect(response.body).toEqual({ error: { code: 'Unauthorized', message } });
    }
  });

  it('answers bad input with Key Vault errors and keeps serving', async () => {
    const put = (body: string, type = 'application/json') =>
      stack.raw('secrets/Input?api-version=7.4', { method: 'PUT', body, headers: { 'content-type': type } });
    const bad = (message: string | RegExp) => ({
      error: { code: 'BadParameter', message: expect.stringMatching(message) },
    });
    expect(await put('{not json')).toMatchObject({ status: 400, body: bad('not valid JSON') });
    expect(await put('{"contentType":"x"}')).toMatchObject({ status: 400, body: bad(/^value:/) });
    expect(await put('{"value":"a"}', 'text/plain')).toMatchObject({
      status: 415,
      body: { error: { code: 'UnsupportedMediaType' } },
    });
    expect(await put(JSON.stringify({ value: 'x'.repeat(25 * 1024 + 1) }))).toMatchObject({
      status: 400,
      body: { error: { code: 'BadParameter', innererror: { code: 'SecretTooLarge' } } },
    });
    expect(await put(JSON.stringify({ value: 'x'.repeat(300 * 1024) }))).toMatchObject({ status: 413 });
    expect(await stack.raw('secrets/my_secret?api-version=7.4')).toMatchObject({
      status: 400,
      body: bad('^The request URI contains an invalid name: my_secret$'),
    });
    expect(await stack.raw(`secrets/${'a'.repeat(128)}?api-version=7.4`)).toMatchObject({ status: 400 });
    expect(await stack.raw('secrets/EncryptionKey')).toMatchObject({ status: 400, body: bad('api-version') });
    expect(await stack.raw('secrets/EncryptionKey?api-version=1.0')).toMatchObject({
      status: 400,
      body: bad(
        /^The specified version \(1\.0\) is not recognized\. Consider using the latest supported version/,
      ),
    });
    expect(await stack.raw('secrets?api-version=7.4&maxresults=26')).toMatchObject({ status: 400 });
    expect(await stack.raw('secrets?api-version=7.4&$skiptoken=%%%')).toMatchObject({ status: 400 });
    expect(await stack.raw('keys/nothing/here/at/all?api-version=7.4')).toMatchObject({ status: 404 });
    expect(await stack.raw('secrets/EncryptionKey?api-version=7.4', { method: 'POST' })).toMatchObject({
      status: 405,
    });
    const huge = await rawGet(`${stack.vault.endpoints.vault}secrets?api-version=7.4`, {
      'x-big': 'a'.repeat(70 * 1024),
    });
    expect(huge).toEqual({
      status: 400,
      body: expect.stringContaining('The size of the request headers is too long.'),
    });
    expect((await stack.client.getSecret('EncryptionKey')).value).toBe(seed.EncryptionKey);
  });
});
