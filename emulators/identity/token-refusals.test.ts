/** Entra's refusals at the token endpoint of what a client sends, as code and raw HTTP meet them. */
import { generateKeyPairSync } from 'node:crypto';
import { ClientCertificateCredential } from '@azure/identity';
import { describe, expect, it, vi } from 'vitest';
import { createCertificate } from '../core/certificate.ts';
import { REDIRECT_URI, useSignInProvider } from './signin-fixture.ts';

const provider = useSignInProvider();
const { app, msalFor, codeFor, redeem, tokenRequest, redeemByForm, expectEntraError } = provider;

describe('token endpoint refusals', () => {
  it('refuses a code redeemed after its 10 minutes with AADSTS70008, not as an unknown one', async () => {
    const msal = msalFor('taskWeb');
    const { code, verifier } = await codeFor(msal);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      vi.advanceTimersByTime(11 * 60 * 1000);
      await expect(redeem(msal, code, verifier)).rejects.toMatchObject({
        errorCode: 'invalid_grant',
        errorMessage: expect.stringMatching(
          /Description: AADSTS70008: The provided authorization code or refresh token has expired/,
        ),
      });
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses a refresh token unused for 90 days with AADSTS700082, naming its issue as Entra words it', async () => {
    const { code, verifier } = await codeFor(msalFor('taskWeb'));
    const web = app('taskWeb');
    const client = { client_id: web.clientId, client_secret: web.clientSecret };
    const before = Math.floor(Date.now() / 1000);
    const redeemed = await redeemByForm(code, verifier, 'openid offline_access User.Read');
    const refreshToken = (await redeemed.json()).refresh_token;
    const after = Math.ceil(Date.now() / 1000);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      vi.advanceTimersByTime((90 * 24 * 3600 + 60) * 1000);
      const refused = await tokenRequest({
        ...client,
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        scope: 'User.Read',
      });
      const description = await expectEntraError(refused, 400, 'invalid_grant', 700082);
      const issued =
        /^AADSTS700082: The refresh token has expired due to inactivity\. The token was issued on (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d{7}Z and was inactive for 90\.00:00:00\. Trace ID: /.exec(
          description,
        );
      const at = Date.parse(`${issued?.[1]}Z`) / 1000;
      expect(at).toBeGreaterThanOrEqual(before);
      expect(at).toBeLessThanOrEqual(after);
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses a certificate (client assertion) as Entra refuses one the app has not registered, AADSTS700027', async () => {
    // The directory registers secrets only (README): any certificate is one the app does not have.
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const certificate = createCertificate({
      serial: '01',
      subject: 'CN=taskWeb',
      issuer: 'CN=taskWeb',
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 3_600_000),
      publicKey: rsa.publicKey,
      signingKey: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey,
      ca: false,
    });
    const key = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' });
    const credential = new ClientCertificateCredential(
      provider.tenantId,
      app('taskWeb').clientId,
      { certificate: `${certificate}\n${key}` },
      { authorityHost: provider.running.endpoints.authority as string, disableInstanceDiscovery: true },
    );
    await expect(credential.getToken('https://graph.microsoft.com/.default')).rejects.toThrow(
      /AADSTS700027: The certificate with identifier used to sign the client assertion is not registered on application\. \[Reason - The key was not found\.\]/,
    );
  });

  it("refuses another app's refresh token with AADSTS700007, whichever app presents it", async () => {
    const msal = msalFor('taskWeb');
    const { code, verifier } = await codeFor(msal);
    const web = app('taskWeb');
    const redeemed = await tokenRequest({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
      client_id: web.clientId,
      client_secret: web.clientSecret,
    });
    const refreshToken = (await redeemed.json()).refresh_token;
    // taskApi signs nobody in here, yet Entra lets any confidential client redeem refresh tokens.
    for (const other of [app('taskApi'), app('developerPortal')]) {
      const refused = await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        scope: 'User.Read',
        client_id: other.clientId,
        client_secret: other.clientSecret,
      });
      expect(await expectEntraError(refused, 400, 'invalid_grant', 700007)).toMatch(
        /^AADSTS700007: The grant was issued for a different client id\. Trace ID: /,
      );
    }
  });

  it('answers a GET on the token endpoint with Entra AADSTS900561 page, not a bare 404', async () => {
    const response = await fetch(provider.running.endpoints.token as string);
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toContain(
      'AADSTS900561: The endpoint only accepts POST requests. Received a GET request.',
    );
  });

  it("refuses a token request without client_id, or with a body that is not a form, with AADSTS900144 'client_id'", async () => {
    const web = app('taskWeb');
    const scope = `api://${app('taskApi').clientId}/.default`;
    const form = { grant_type: 'client_credentials', client_secret: web.clientSecret, scope };
    const json = fetch(provider.running.endpoints.token as string, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...form, client_id: web.clientId }),
    });
    for (const refused of [tokenRequest(form), json])
      expect(await expectEntraError(await refused, 400, 'invalid_request', 900144)).toMatch(
        /^AADSTS900144: The request body must contain the following parameter: 'client_id'\. Trace ID: /,
      );
  });
});
