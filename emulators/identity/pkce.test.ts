/** PKCE's two methods, as Entra takes them ("supports both plain and S256"). */
import { CryptoProvider } from '@azure/msal-node';
import { describe, expect, it } from 'vitest';
import { REDIRECT_URI, SCOPES, useSignInProvider } from './signin-fixture.ts';

const { user, msalFor, codeAt, redeem } = useSignInProvider();

describe('PKCE', () => {
  it('takes the plain method, and a challenge without a method as plain, as Entra does (a wrong verifier is AADSTS501481)', async () => {
    const msal = msalFor('taskWeb');
    const { verifier } = await new CryptoProvider().generatePkceCodes();
    const plain = await msal.getAuthCodeUrl({
      scopes: SCOPES,
      redirectUri: REDIRECT_URI,
      codeChallenge: verifier,
      codeChallengeMethod: 'plain',
      state: 'state-1',
    });
    // Entra: "If excluded, code_challenge is assumed to be plaintext if code_challenge is included."
    const withoutMethod = new URL(plain);
    withoutMethod.searchParams.delete('code_challenge_method');
    // An authorize request may be a POST form too, as at Entra: the same rule.
    for (const url of [plain, withoutMethod.href])
      for (const method of ['GET', 'POST'] as const) {
        const { code } = await codeAt(url, method);
        const result = await redeem(msal, code, verifier);
        expect(result.idTokenClaims).toMatchObject({ oid: user('alice').objectId });
      }
    const { code } = await codeAt(plain);
    const other = await new CryptoProvider().generatePkceCodes();
    await expect(redeem(msal, code, other.verifier)).rejects.toMatchObject({
      errorCode: 'invalid_grant',
      errorMessage: expect.stringMatching(/Description: AADSTS501481: The Code_Verifier does not match/),
    });
  });
});
