import { describe, expect, it } from 'vitest';
import { entraErrorBody, toEntraError } from './entra-errors.ts';

const subject = {
  clientId: 'client',
  tenantId: 'tenant',
  redirectUri: 'https://app/cb',
  resource: 'api://x',
  responseType: 'code',
};

describe('Entra error texts', () => {
  it('answers a failure inside the provider with 500 and AADSTS50000, never its own words', () => {
    const entra = toEntraError(
      { error: 'server_error', error_description: 'oops! something went wrong' },
      subject,
    );
    expect(entra).toMatchObject({ status: 500, error: 'server_error', code: 50000 });
    const body = entraErrorBody(entra);
    expect(body.error_description).toMatch(/^AADSTS50000: There was an error issuing a token/);
    expect(body.error_description).not.toContain('oops');
    expect(body.error_codes).toEqual([50000]);
  });

  it('names the redirect URI and the client in AADSTS50011', () => {
    const entra = toEntraError({ error: 'invalid_redirect_uri' }, subject);
    expect(entra.code).toBe(50011);
    expect(entra.message).toMatch(
      /^The redirect URI 'https:\/\/app\/cb' specified in the request does not match the redirect URIs configured for the application 'client'\./,
    );
  });
});
