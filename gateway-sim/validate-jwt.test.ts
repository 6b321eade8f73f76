import type { KeyObject } from 'node:crypto';
import { generateKeyPair, importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../emulators/core/emulator.ts';
import { startEmulator, type TestContext, testContext, testDataDir } from '../emulators/core/testing.ts';
import identity from '../emulators/identity/index.ts';
import { editArtifact, startBackend, startGateway, type TestGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';
const UNAUTHORIZED = '{ "statusCode": 401, "message": "Unauthorized. Access token is missing or invalid." }';

const optIn = (dir: string) =>
  editArtifact(dir, 'policies/apis/task-manager-functions-api.xml', (text) =>
    text.replace('<base />', '<base />\n    <include-fragment fragment-id="validate-entra-token" />'),
  );

describe('gateway: OAuth 2.0 on managetask (EntraID attached; validate-jwt opt-in)', () => {
  const data = testDataDir();
  let context: TestContext;
  let provider: RunningEmulator;
  let backend: Awaited<ReturnType<typeof startBackend>>;
  let off: TestGateway;
  let on: TestGateway;
  /** The API app's client id: a managed identity gets tokens only for a resource the directory has. */
  let apiClientId: string;

  beforeAll(async () => {
    context = await testContext(data.dir, { inMemory: true });
    apiClientId = context.secrets.directory.applications.taskApi?.clientId ?? '';
    provider = await startEmulator(identity, { port: 0 }, context);
    backend = await startBackend();
    const namedValues = { AuthUrl: provider.endpoints.authority as string, EntraClientId: apiClientId };
    off = await startGateway({ functionApp: backend.url, webApp: backend.url, namedValues, context });
    on = await startGateway({
      functionApp: backend.url,
      webApp: backend.url,
      namedValues,
      context,
      prepare: optIn,
    });
  });
  afterAll(async () => {
    await off?.stop();
    await on?.stop();
    await provider?.stop();
    await backend?.close();
    data.remove();
  });

  /** A token from the identity provider for the API's audience (a managed identity's, a real RS256 JWT). */
  async function providerToken(): Promise<string> {
    const url = new URL(provider.endpoints.identityEndpoint as string);
    url.searchParams.set('api-version', '2019-08-01');
    url.searchParams.set('resource', `api://${apiClientId}`);
    const response = await fetch(url, {
      headers: { 'X-IDENTITY-HEADER': context.secrets.identities.functionApp?.header ?? '' },
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { access_token: string }).access_token;
  }

  /** A gateway of its own, validate-jwt on, its artifacts further edited by `edit`. */
  const optedIn = (edit: (dir: string) => void) =>
    startGateway({
      functionApp: backend.url,
      webApp: backend.url,
      namedValues: { AuthUrl: provider.endpoints.authority as string, EntraClientId: apiClientId },
      context,
      prepare: (dir) => {
        optIn(dir);
        edit(dir);
      },
    });

  const call = async (gw: TestGateway, token?: string) => {
    const headers: Record<string, string> = { [KEY]: (await gw.keys('task-manager-all-apis')).primaryKey };
    if (token) headers.authorization = `Bearer ${token}`;
    const response = await fetch(`${gw.url}/functions/managetask`, { method: 'POST', headers, body: '{}' });
    return { status: response.status, body: await response.text() };
  };

  it('the API carries the EntraID server with the spec URLs and scope (client secret never shown)', async () => {
    const apis = (await off.gateway.actions?.apis?.(undefined)) as {
      displayName: string;
      authorizationServer?: Record<string, unknown>;
    }[];
    const server = apis.find((api) => api.displayName === 'TaskManagerFunctionsAPI')?.authorizationServer;
    const base = `${provider.endpoints.authority}/${context.secrets.tenantId}/oauth2/v2.0`;
    expect(server).toMatchObject({
      name: 'EntraID',
      clientId: apiClientId,
      authorizationEndpoint: `${base}/authorize`,
      tokenEndpoint: `${base}/token`,
      defaultScope: `api://${apiClientId}/user_impersonation`,
    });
    expect(server).not.toHaveProperty('clientSecret');
    expect(apis.find((api) => api.displayName === 'TaskManagerWebAPI')?.authorizationServer).toBeUndefined();
  });

  it('off (the shipped policies): a valid key and no token passes, as on Azure', async () => {
    expect((await call(off)).status).toBe(200);
  });

  it('on: no token → 401 with APIM body', async () => {
    expect(await call(on)).toEqual({ status: 401, body: UNAUTHORIZED });
  });

  it('on: a token from another issuer → 401 (its own key, or even the provider key with another issuer)', async () => {
    const sign = (key: CryptoKey | KeyObject, kid: string) =>
      new SignJWT({})
        .setProtectedHeader({ alg: 'RS256', kid })
        .setIssuer('https://login.example.com/other-tenant/v2.0')
        .setAudience(`api://${apiClientId}`)
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(key);
    const { privateKey } = await generateKeyPair('RS256');
    expect(await call(on, await sign(privateKey, 'foreign-key'))).toEqual({
      status: 401,
      body: UNAUTHORIZED,
    });
    const providerKey = (await importJWK(context.secrets.signingKey, 'RS256')) as CryptoKey;
    expect(await call(on, await sign(providerKey, context.secrets.signingKey.kid ?? ''))).toEqual({
      status: 401,
      body: UNAUTHORIZED,
    });
  });

  it('on: a token from the provider is forwarded (audience the client id as v2 tokens carry it, or api://<client id>)', async () => {
    const before = backend.seen.length;
    expect((await call(on, await providerToken())).status).toBe(200);
    const byIdentifierUri = await new SignJWT({ scp: 'user_impersonation' })
      .setProtectedHeader({ alg: 'RS256', kid: context.secrets.signingKey.kid ?? '' })
      .setIssuer(provider.endpoints.issuer as string)
      .setAudience(`api://${apiClientId}`)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(await importJWK(context.secrets.signingKey, 'RS256'));
    expect((await call(on, byIdentifierUri)).status).toBe(200);
    expect(backend.seen.length).toBe(before + 2);
  });

  it('on: a provider token for another audience → 401', async () => {
    const other = await new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: context.secrets.signingKey.kid ?? '' })
      .setIssuer(provider.endpoints.issuer as string)
      .setAudience('api://some-other-api')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(await importJWK(context.secrets.signingKey, 'RS256'));
    expect(await call(on, other)).toEqual({ status: 401, body: UNAUTHORIZED });
  });

  it('on: token lifetimes are judged by real time, as the provider stamps them: a stack clock moved two hours locks no one out', async () => {
    const key = await importJWK(context.secrets.signingKey, 'RS256');
    const now = Math.floor(Date.now() / 1000);
    const token = (issuedAt: number) =>
      new SignJWT({ scp: 'user_impersonation', ver: '2.0' })
        .setProtectedHeader({ alg: 'RS256', kid: context.secrets.signingKey.kid ?? '' })
        .setIssuer(provider.endpoints.issuer as string)
        .setAudience(apiClientId)
        .setIssuedAt(issuedAt)
        .setNotBefore(issuedAt)
        .setExpirationTime(issuedAt + 3600)
        .sign(key);
    const fresh = await token(now);
    const expired = await token(now - 7200);
    expect((await call(on, fresh)).status).toBe(200);
    expect(await call(on, expired)).toEqual({ status: 401, body: UNAUTHORIZED });
    context.clock.advance(2 * 3600_000);
    // The provider stamps its tokens by real time (a user's lasts an hour), and the SDK that cached one
    // sends it until then: the gateway judges it by the same time.
    expect((await call(on, fresh)).status).toBe(200);
    expect(await call(on, expired)).toEqual({ status: 401, body: UNAUTHORIZED });
  });

  it("without failed-validation-error-message, APIM's own texts: no token → JWT not present., a forged one → Invalid JWT.", async () => {
    const bare = await optedIn((dir) =>
      editArtifact(dir, 'policy-fragments/validate-entra-token.xml', (text) =>
        text.replace(/ failed-validation-error-message="[^"]*"/, ''),
      ),
    );
    try {
      const refused = (message: string) => ({
        status: 401,
        body: `{ "statusCode": 401, "message": "${message}" }`,
      });
      expect(await call(bare)).toEqual(refused('JWT not present.'));
      const token = await providerToken();
      expect(await call(bare, `${token.slice(0, -4)}AAAA`)).toEqual(refused('Invalid JWT.'));
      expect(await call(bare, 'not-a-jwt')).toEqual(refused('Invalid JWT.'));
      expect((await call(bare, token)).status).toBe(200);
    } finally {
      await bare.stop();
    }
  });

  it("on-error's context.LastError.Reason names each refusal as APIM's error-handling reference does", async () => {
    const gw = await optedIn((dir) =>
      editArtifact(dir, 'policies/global.xml', (text) =>
        text.replace(
          '<on-error />',
          '<on-error><set-header name="x-reason" exists-action="override"><value>@(context.LastError.Source + " " + context.LastError.Reason)</value></set-header></on-error>',
        ),
      ),
    );
    const providerKey = await importJWK(context.secrets.signingKey, 'RS256');
    const sign = (
      claims: { iss?: string; aud?: string; iat?: number },
      key: CryptoKey | KeyObject | Uint8Array = providerKey,
      kid = context.secrets.signingKey.kid ?? '',
    ) => {
      const iat = claims.iat ?? Math.floor(Date.now() / 1000);
      return new SignJWT({})
        .setProtectedHeader({ alg: 'RS256', kid })
        .setIssuer(claims.iss ?? (provider.endpoints.issuer as string))
        .setAudience(claims.aud ?? apiClientId)
        .setIssuedAt(iat)
        .setExpirationTime(iat + 3600)
        .sign(key);
    };
    const reason = async (token?: string) => {
      const headers: Record<string, string> = { [KEY]: (await gw.keys('task-manager-all-apis')).primaryKey };
      if (token) headers.authorization = `Bearer ${token}`;
      const response = await fetch(`${gw.url}/functions/managetask`, { method: 'POST', headers, body: '{}' });
      expect(await response.text()).toBe(UNAUTHORIZED);
      return response.headers.get('x-reason');
    };
    try {
      const valid = await sign({});
      const { privateKey } = await generateKeyPair('RS256');
      expect(await reason()).toBe('validate-jwt TokenNotPresent');
      expect(await reason(`${valid.slice(0, -4)}AAAA`)).toBe('validate-jwt TokenSignatureInvalid');
      expect(await reason(await sign({}, privateKey, 'foreign-key'))).toBe(
        'validate-jwt TokenSignatureKeyNotFound',
      );
      expect(await reason(await sign({ iss: 'https://login.example.com/other/v2.0' }))).toBe(
        'validate-jwt TokenIssuerNotAllowed',
      );
      expect(await reason(await sign({ aud: 'api://some-other-api' }))).toBe(
        'validate-jwt TokenAudienceNotAllowed',
      );
      expect(await reason(await sign({ iat: Math.floor(Date.now() / 1000) - 7200 }))).toBe(
        'validate-jwt TokenExpired',
      );
      expect(await reason('not-a-jwt')).toBe('validate-jwt JwtInvalid');
    } finally {
      await gw.stop();
    }
  });
});
