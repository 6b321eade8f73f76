import { DefaultAzureCredential, ManagedIdentityCredential } from '@azure/identity';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../core/emulator.ts';
import type { IdentitySecrets } from '../core/secrets.ts';
import {
  rawGet,
  startEmulator,
  type TestContext,
  testContext,
  testDataDir,
  useManagedIdentityEnv,
} from '../core/testing.ts';
import identity from './index.ts';

const data = testDataDir();
let context: TestContext;
let running: RunningEmulator;
const restoreEnv: (() => void)[] = [];

/** Managed-identity settings as App Service gives them to an app; read when a credential is built. */
function actAs(app: string) {
  const secrets = context.secrets.identities[app];
  if (!secrets) throw new Error(`no identity ${app}`);
  restoreEnv.push(useManagedIdentityEnv(running.endpoints.identityEndpoint as string, secrets.header));
  return secrets;
}

beforeAll(async () => {
  context = await testContext(data.dir, { inMemory: true });
  running = await startEmulator(identity, { port: 0 }, context);
});
afterEach(() => {
  // Undo in reverse, so the environment before the first actAs comes back.
  for (const restore of restoreEnv.splice(0).reverse()) restore();
});
afterAll(async () => {
  await running?.stop();
  data.remove();
});

describe('identity emulator', () => {
  it('reports its endpoints on 127.0.0.1 and answers its health check', async () => {
    const { authority, issuer, jwksUri, identityEndpoint } = running.endpoints;
    expect(authority).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(issuer).toBe(`${authority}/${context.secrets.tenantId}/v2.0`);
    expect(jwksUri).toBe(`${authority}/${context.secrets.tenantId}/discovery/v2.0/keys`);
    expect(identityEndpoint).toBe(`${authority}/msi/token`);
    await running.health();
  });

  // MSAL fixes the managed-identity source (endpoint and header) once per process, as an app has one
  // identity: the SDK speaks for functionApp here; webApp's token is fetched as the SDK would.
  // identity-refused.test.ts runs the SDK with a wrong header in a process of its own.
  it('refuses to start without the signing key (the launcher gives it to the identity provider only)', async () => {
    const { signingKey: _, ...shared } = context.secrets;
    await expect(startEmulator(identity, { port: 0 }, { ...context, secrets: shared })).rejects.toThrow(
      'the identity provider was given no signing key',
    );
  });

  it("issues functionApp Entra's v1.0 token for an Azure resource through ManagedIdentityCredential", async () => {
    actAs('functionApp');
    const before = Math.floor(Date.now() / 1000);
    const token = await new ManagedIdentityCredential().getToken('https://vault.azure.net/.default');
    expect(decodeProtectedHeader(token.token)).toMatchObject({
      alg: 'RS256',
      kid: context.secrets.signingKey.kid,
    });
    const claims = expectClaims(token.token, 'functionApp', 'https://vault.azure.net');
    expect(claims.iat).toBeGreaterThanOrEqual(before);
    // MSAL turns expires_on into "expires in N s" and back at its own second: allow that one second.
    expect(Math.abs(token.expiresOnTimestamp / 1000 - (claims.exp ?? 0))).toBeLessThanOrEqual(1);
  });

  it('issues webApp its own token', async () => {
    const secrets = actAs('webApp');
    const url = `${running.endpoints.identityEndpoint}?api-version=2019-08-01&resource=https://cosmos.azure.com`;
    const response = await fetch(url, { headers: { 'X-IDENTITY-HEADER': secrets.header } });
    expectClaims((await response.json()).access_token, 'webApp', 'https://cosmos.azure.com');
  });

  it('serves DefaultAzureCredential as App Service does', async () => {
    const secrets = actAs('functionApp');
    const token = await new DefaultAzureCredential().getToken('https://storage.azure.com/.default');
    expect(decodeJwt(token.token)).toMatchObject({
      aud: 'https://storage.azure.com',
      oid: secrets.principalId,
    });
  });

  it('answers the App Service token response shape', async () => {
    const secrets = actAs('webApp');
    const url = `${running.endpoints.identityEndpoint}?api-version=2019-08-01&resource=https://management.azure.com/`;
    const response = await fetch(url, { headers: { 'X-IDENTITY-HEADER': secrets.header } });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(Object.keys(body).sort()).toEqual([
      'access_token',
      'client_id',
      'expires_on',
      'resource',
      'token_type',
    ]);
    expect(body).toMatchObject({
      resource: 'https://management.azure.com/',
      token_type: 'Bearer',
      client_id: secrets.clientId,
    });
    expect(body.expires_on).toMatch(/^\d+$/);
    // The resource as asked for, trailing slash included, as Entra's v1.0 tokens carry it.
    expectClaims(body.access_token, 'webApp', 'https://management.azure.com/');
  });

  it('refuses a missing or wrong X-IDENTITY-HEADER', async () => {
    const url = `${running.endpoints.identityEndpoint}?api-version=2019-08-01&resource=https://vault.azure.net`;
    for (const headers of [{}, { 'X-IDENTITY-HEADER': 'not-the-header' }] as Record<string, string>[]) {
      const response = await fetch(url, { headers });
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({
        statusCode: 401,
        message: expect.stringContaining('X-IDENTITY-HEADER'),
      });
    }
  });

  it('refuses a wrong api-version, a missing resource and another identity', async () => {
    const { header, clientId } = actAs('functionApp');
    const base = running.endpoints.identityEndpoint;
    const vault = `${base}?api-version=2019-08-01&resource=https://vault.azure.net`;
    const otherIdentity = 'Unable to load the proper Managed Identity.';
    const cases = [
      [
        `${base}?api-version=2017-09-01&resource=https://vault.azure.net`,
        'Unsupported api-version. Supported version is 2019-08-01.',
      ],
      [`${base}?api-version=2019-08-01`, 'Required query parameter resource is missing.'],
      [`${vault}&client_id=${context.secrets.identities.webApp?.clientId}`, otherIdentity],
      [`${vault}&principal_id=${context.secrets.identities.webApp?.principalId}`, otherIdentity],
      [`${vault}&mi_res_id=/subscriptions/x/resourceGroups/y`, otherIdentity],
    ];
    for (const [url, message] of cases) {
      const response = await fetch(url as string, { headers: { 'X-IDENTITY-HEADER': header } });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ statusCode: 400, message });
    }
    const own = await fetch(
      `${base}?api-version=2019-08-01&resource=https://x.example&client_id=${clientId}`,
      {
        headers: { 'X-IDENTITY-HEADER': header },
      },
    );
    expect(own.status).toBe(200);
  });

  it("issues a token for the directory's API app as Entra issues its v2 tokens (aud = its client id)", async () => {
    // taskApi is registered with requestedAccessTokenVersion 2 (system/deploy): its tokens carry the
    // application id, whoever asks, a managed identity too.
    const secrets = actAs('functionApp');
    const api = context.secrets.directory.applications.taskApi?.clientId;
    const token = await new ManagedIdentityCredential().getToken(`api://${api}/.default`);
    expectClaims(token.token, 'functionApp', api ?? '', '2.0');
    const url = `${running.endpoints.identityEndpoint}?api-version=2019-08-01&resource=api://${api}`;
    const response = await fetch(url, { headers: { 'X-IDENTITY-HEADER': secrets.header } });
    expect(await response.json()).toMatchObject({ resource: `api://${api}` });
  });

  it('answers a resource Entra does not know (a permission, another api://) as App Service does: 500', async () => {
    const { header } = actAs('functionApp');
    const api = context.secrets.directory.applications.taskApi?.clientId;
    for (const resource of [
      `api://${api}/user_impersonation`,
      'api://33333333-3333-3333-3333-333333333333',
    ]) {
      const url = `${running.endpoints.identityEndpoint}?api-version=2019-08-01&resource=${resource}`;
      const response = await fetch(url, { headers: { 'X-IDENTITY-HEADER': header } });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({
        statusCode: 500,
        message: 'An unexpected error occured while fetching the AAD Token.',
        correlationId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });
    }
  });

  it('publishes the OpenID configuration and the public signing key only', async () => {
    const { authority, issuer, jwksUri } = running.endpoints;
    const config = await (
      await fetch(`${authority}/${context.secrets.tenantId}/v2.0/.well-known/openid-configuration`)
    ).json();
    expect(config).toMatchObject({
      issuer,
      jwks_uri: jwksUri,
      id_token_signing_alg_values_supported: ['RS256'],
    });
    const jwks = await (await fetch(`${jwksUri}`)).json();
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toEqual({
      kty: 'RSA',
      n: context.secrets.signingKey.n,
      e: context.secrets.signingKey.e,
      kid: context.secrets.signingKey.kid,
      alg: 'RS256',
      use: 'sig',
    });
  });

  it('answers bad requests with errors and keeps serving', async () => {
    const { authority } = running.endpoints;
    const unknownTenant = await fetch(`${authority}/not-a-tenant/v2.0/.well-known/openid-configuration`);
    expect(unknownTenant.status).toBe(400);
    expect(await unknownTenant.json()).toMatchObject({
      error: 'invalid_tenant',
      error_description: expect.stringMatching(/^AADSTS90002: Tenant 'not-a-tenant' not found\./),
    });
    const unknownPath = await fetch(`${authority}/${context.secrets.tenantId}/nothing`);
    expect(unknownPath.status).toBe(404);
    const post = await fetch(`${authority}/msi/token`, { method: 'POST', body: 'x' });
    expect(post.status).toBe(405);
    expect(await rawGet(`${authority}/msi/token`, { 'x-big': 'a'.repeat(70 * 1024) })).toEqual({
      status: 400,
      body: expect.stringContaining('The size of the request headers is too long.'),
    });
    await running.health();
  });
});

/**
 * Every claim of `app`'s managed-identity token, as Entra issues it: v1.0 for Azure's resources (their
 * resource apps do not ask for v2), v2.0 for an API registered with requestedAccessTokenVersion 2.
 */
function expectClaims(token: string, app: string, audience: string, version: '1.0' | '2.0' = '1.0') {
  const claims = decodeJwt(token);
  const secrets = context.secrets.identities[app] as IdentitySecrets;
  const tenant = context.secrets.tenantId;
  const site = context.topology.identities[app]?.app;
  const common = {
    aud: audience,
    iat: expect.any(Number),
    nbf: claims.iat,
    exp: (claims.iat ?? 0) + 24 * 3600,
    idtyp: 'app',
    oid: secrets.principalId,
    sub: secrets.principalId,
    tid: tenant,
    rh: expect.stringMatching(/^0\.[\w-]+\.$/),
    uti: expect.stringMatching(/^[\w-]{22}$/),
    xms_mirid: `/subscriptions/00000000-0000-0000-0000-000000000000/resourcegroups/taskstack/providers/Microsoft.Web/sites/${site}`,
  };
  const sts = `https://sts.windows.net/${tenant}/`;
  const shaped =
    version === '1.0'
      ? { iss: sts, idp: sts, appid: secrets.clientId, appidacr: '2', ver: '1.0' }
      : { iss: running.endpoints.issuer, azp: secrets.clientId, azpacr: '2', ver: '2.0' };
  expect(claims).toEqual({ ...common, ...shaped });
  return claims;
}
