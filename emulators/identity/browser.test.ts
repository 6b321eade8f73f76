/**
 * The sign-in page as a person uses it: Debian's chromium driven by playwright-core (headless, no
 * sandbox, a fresh profile). Chromium does not read NODE_EXTRA_CA_CERTS; it is told to accept the
 * certificate that carries the stack's server key (by its SPKI hash), and no other certificate.
 * Screenshots go to test-results/identity/ (ignored by git).
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { ConfidentialClientApplication, CryptoProvider } from '@azure/msal-node';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { EmulatorContext, RunningEmulator } from '../core/emulator.ts';
import { close, LOOPBACK, listen } from '../core/http.ts';
import { launchChromium, startEmulator, testContext, testDataDir } from '../core/testing.ts';
import identity from './index.ts';
import { WRONG_CREDENTIALS } from './login.ts';

const screenshots = fileURLToPath(new URL('../../test-results/identity/', import.meta.url));
const data = testDataDir();
let context: EmulatorContext;
let running: RunningEmulator;
let browser: Browser;
/** Stands in for the app: answers every page with a line, so the browser has somewhere to land. */
let app: Server;
let appUrl: string;

beforeAll(async () => {
  mkdirSync(screenshots, { recursive: true });
  context = await testContext(data.dir, { inMemory: true });
  app = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('the app'));
  appUrl = `http://${LOOPBACK}:${await listen(app, 0)}`;
  running = await startEmulator(
    identity,
    {
      port: 0,
      redirectUris: { taskWeb: [`${appUrl}/signin-oidc`] },
      postLogoutRedirectUris: { taskWeb: [`${appUrl}/`] },
    },
    context,
  );
  browser = await launchChromium(context.tls);
});
afterAll(async () => {
  await browser?.close();
  await running?.stop();
  if (app) await close(app);
  data.remove();
});

it('a person signs in on the page, sees a wrong password refused, and signs out', async () => {
  const web = context.secrets.directory.applications.taskWeb;
  const alice = { ...context.topology.directory.users.alice, ...context.secrets.directory.users.alice };
  if (!web || !alice.password || !alice.userPrincipalName) throw new Error('no taskWeb or alice');
  const { authority } = running.endpoints;
  const msal = new ConfidentialClientApplication({
    auth: {
      clientId: web.clientId,
      clientSecret: web.clientSecret,
      authority: `${authority}/${context.secrets.tenantId}`,
      knownAuthorities: [new URL(authority as string).host],
    },
  });
  const redirectUri = `${appUrl}/signin-oidc`;
  const { verifier, challenge } = await new CryptoProvider().generatePkceCodes();
  const signInUrl = await msal.getAuthCodeUrl({
    scopes: ['User.Read'],
    redirectUri,
    codeChallenge: challenge,
    codeChallengeMethod: 'S256',
  });
  const page = await (await browser.newContext()).newPage();

  await page.goto(signInUrl);
  await page.fill('#username', alice.userPrincipalName);
  await page.fill('#password', 'not the password');
  await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
  expect(await page.getByRole('alert').textContent()).toBe(WRONG_CREDENTIALS);
  expect(await page.inputValue('#username')).toBe(alice.userPrincipalName);
  await page.screenshot({ path: `${screenshots}wrong-password.png`, fullPage: true });

  await page.fill('#password', alice.password);
  await Promise.all([page.waitForURL(`${redirectUri}?**`), page.click('button[type=submit]')]);
  const code = new URL(page.url()).searchParams.get('code') ?? '';
  const result = await msal.acquireTokenByCode({
    code,
    codeVerifier: verifier,
    scopes: ['User.Read'],
    redirectUri,
  });
  expect(result.account?.name).toBe(alice.displayName);

  const logout = new URL(running.endpoints.logout as string);
  logout.search = new URLSearchParams({
    post_logout_redirect_uri: `${appUrl}/`,
    client_id: web.clientId,
  }).toString();
  await page.goto(logout.href);
  await page.screenshot({ path: `${screenshots}sign-out.png`, fullPage: true });
  await Promise.all([page.waitForURL(`${appUrl}/`), page.getByRole('button', { name: 'Sign out' }).click()]);

  // The provider's session is gone: signing in asks for the password again.
  await page.goto(signInUrl);
  expect(await page.locator('#password').isVisible()).toBe(true);
  await page.screenshot({ path: `${screenshots}signed-out.png`, fullPage: true });
});
