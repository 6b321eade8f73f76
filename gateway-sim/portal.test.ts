/**
 * The developer portal's routes, against a stack of the identity provider and the gateway started by the
 * launcher (the portal's redirect URI registered by its wiring): the listing, the sign-in redirect (PKCE,
 * the registered redirect URI), a whole sign-in with a cookie-keeping fetch, and the refusals.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDataDir, waitFor } from '../emulators/core/testing.ts';
import { FormClient, type Hop } from '../emulators/identity/form-client.ts';
import { type Stack, start } from '../emulators/stack/launcher.ts';
import { FORM_REFUSED, SIGN_IN_FAILED, SIGN_IN_REQUIRED } from './portal.ts';

const data = testDataDir();
let stack: Stack;
let portal: string;
let authUrl: string;
let log: () => string;

beforeAll(async () => {
  stack = await start({
    dataDir: data.dir,
    ports: 'free',
    console: false,
    components: ['identity', 'gateway'],
  });
  portal = stack.description.endpoints.gateway?.portalUrl as string;
  authUrl = stack.description.authUrl;
  log = () => readFileSync(stack.description.logs.gateway as string, 'utf8');
});
afterAll(async () => {
  await stack?.stop();
  data.remove();
});

const secrets = () => JSON.parse(readFileSync(`${data.dir}/keys.json`, 'utf8'));

/** Signs alice in through the provider's form; returns the browser and the portal page it lands on. */
async function signedIn(): Promise<{ browser: FormClient; page: Hop }> {
  const browser = new FormClient();
  const loginPage = await browser.follow(`${portal}/signin`);
  const alice = stack.description.testUsers?.find((user) => user.userPrincipalName.startsWith('alice'));
  if (!alice) throw new Error('no alice');
  const answer = await browser.signIn(loginPage, alice.userPrincipalName, alice.password);
  const page = await browser.follow(answer.location ?? '', authUrl);
  return { browser, page };
}

const csrfOf = (page: Hop) => /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';

/** The text a reader sees of one operation's part of the page (tags dropped, entities decoded). */
function operationText(html: string, id: string) {
  const start = html.indexOf(`<div class="operation" id="${id}">`);
  const part = html.slice(start, html.indexOf('</div>', start));
  const entities: Record<string, string> = {
    '&amp;': '&',
    '&lt;': '<',
    '&gt;': '>',
    '&quot;': '"',
    '&#39;': "'",
  };
  return (
    part
      // Inline markup adds no space; blocks and cells do.
      .replace(/<\/?(code|strong)>/g, '')
      .replace(/<[^>]+>/g, ' ')
      .replace(/&[#\w]+;/g, (e) => entities[e] ?? e)
      .replace(/\s+/g, ' ')
  );
}
const document = (name: string) =>
  JSON.parse(readFileSync(new URL(`../openapi/${name}.json`, import.meta.url), 'utf8')) as {
    paths: Record<string, Record<string, OpenApiOperation>>;
  };
interface OpenApiOperation {
  operationId: string;
  requestBody?: {
    content: Record<string, { schema: { properties: Record<string, { type: string }>; required: string[] } }>;
  };
  responses: Record<string, { description: string; content?: Record<string, { example?: unknown }> }>;
}

describe('the developer portal', () => {
  it('lists both APIs and their operations from the OpenAPI documents, offering sign-in', async () => {
    const bare = await fetch(portal, { redirect: 'manual' });
    expect(bare.status).toBe(303);
    expect(bare.headers.get('location')).toBe(`${portal}/`);
    const page = await fetch(`${portal}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    for (const text of [
      'TaskManagerFunctionsAPI',
      'TaskManagerWebAPI',
      '<h3>ManageTask</h3>',
      '<code>POST /functions/managetask</code>',
      '<h3>Get Tasks</h3>',
      '<code>GET /web/api/tasks</code>',
      '<h3>Create Task</h3>',
      '<code>POST /web/api/tasks</code>',
      'OAuth 2.0 server <code>EntraID</code>',
      '<a id="sign-in" href="signin">Sign in</a>',
    ])
      expect(html).toContain(text);
    expect(html).not.toContain(stack.description.subscriptionKey);
    expect(html).not.toContain('Try it');
  });

  it("shows each operation's request body (properties, which are required) and every documented response with its text and example", async () => {
    const html = await (await fetch(`${portal}/`)).text();
    const apis = { 'gateway-functions': 'task-manager-functions-api', 'gateway-web': 'task-manager-web-api' };
    let checked = 0;
    for (const [file, api] of Object.entries(apis))
      for (const methods of Object.values(document(file).paths))
        for (const operation of Object.values(methods)) {
          const text = operationText(html, `op-${api}-${operation.operationId}`);
          for (const [status, response] of Object.entries(operation.responses)) {
            expect(text).toContain(`${status} ${response.description.replace(/\s+/g, ' ')}`);
            for (const [type, media] of Object.entries(response.content ?? {}))
              if (media.example !== undefined)
                expect(text).toContain(
                  `${type} ${JSON.stringify(media.example, null, 2).replace(/\s+/g, ' ')}`,
                );
            checked++;
          }
          for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
            expect(text).toContain(`Request body ${type}, required`);
            for (const [property, schema] of Object.entries(media.schema.properties))
              expect(text).toContain(
                `${property} ${schema.type} ${media.schema.required.includes(property) ? 'yes' : 'no'}`,
              );
          }
        }
    expect(checked).toBe(15);
  });

  it('sends the visitor to the provider: authorization code with PKCE, the registered redirect URI', async () => {
    const answer = await fetch(`${portal}/signin`, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    const authorize = new URL(answer.headers.get('location') ?? '');
    const { directory, tenantId } = secrets();
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${authUrl}/${tenantId}/oauth2/v2.0/authorize`);
    const query = Object.fromEntries(authorize.searchParams);
    expect(query).toMatchObject({
      client_id: directory.applications.developerPortal.clientId,
      redirect_uri: `${portal}/signin-aad`,
      response_type: 'code',
      code_challenge_method: 'S256',
    });
    expect(query.code_challenge).toMatch(/^[\w-]{43}$/);
    expect(query.state).toBeTruthy();
    expect(query.scope?.split(' ')).toContain(
      `api://${directory.applications.taskApi.clientId}/user_impersonation`,
    );
    const cookie = answer.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(
      new RegExp(
        `^portal\\.signin\\.${query.state}=[^;]+; Path=/developer; Max-Age=600; HttpOnly; Secure; SameSite=Lax$`,
      ),
    );
    // The provider knows the redirect URI (an unregistered one gets AADSTS50011's page): its sign-in page.
    const provider = await new FormClient().follow(authorize.href);
    expect(provider.status).toBe(200);
    expect(provider.body).toContain('name="password"');
    expect(provider.body).not.toContain('AADSTS50011');
  });

  it('signs a test user in and shows the All-APIs subscription key; Try it answers through the gateway', async () => {
    const { browser, page } = await signedIn();
    expect(page.status).toBe(200);
    expect(page.body).toContain('Signed in as <strong>Alice Tester</strong>');
    expect(page.body).toContain(`<code id="primary-key">${stack.description.subscriptionKey}</code>`);
    // Each operation's Try it comes before its documentation, as APIM's portal puts it at the top: no
    // scrolling past every response to reach it.
    const manageTask = page.body.slice(page.body.indexOf('id="op-task-manager-functions-api-ManageTask"'));
    expect(manageTask.indexOf('aria-label="Try it: ManageTask"')).toBeGreaterThan(0);
    expect(manageTask.indexOf('aria-label="Try it: ManageTask"')).toBeLessThan(
      manageTask.indexOf('<h4>Request body</h4>'),
    );
    // Only identity and the gateway run: the function app's port is not served, so the gateway's answer
    // is its own (500; whatever it is, it is shown) — a real call through the gateway, with the key.
    const tried = await browser.request(`${portal}/try`, {
      form: {
        _csrf: csrfOf(page),
        operation: 'task-manager-functions-api/ManageTask',
        body: '{"Title":"x"}',
      },
    });
    expect(tried.status).toBe(200);
    expect(tried.body).toContain(`POST ${stack.description.gatewayUrl}/functions/managetask`);
    expect(tried.body).toContain('Authorization: Bearer (your access token)');
    expect(tried.body).toMatch(/Status <strong id="status">\d{3}<\/strong>/);
    // The gateway's trace of that call (all-APIs subscription); keys and tokens never reach the log.
    const lines = await waitFor('the trace in the log', () => {
      const text = log();
      return /POST \/functions\/managetask.*task-manager-all-apis/.test(text) && text;
    });
    expect(lines).not.toContain(stack.description.subscriptionKey);
    expect(lines).not.toMatch(/eyJ[\w-]+\.eyJ/);
  });

  it("Try it's body starts as a sample of the request body's schema, as APIM's portal fills it", async () => {
    const { page } = await signedIn();
    const bodyOf = (id: string) => {
      const part = page.body.slice(page.body.indexOf(`id="${id}"`));
      return JSON.parse(
        (/<textarea[^>]*>([^<]*)<\/textarea>/.exec(part)?.[1] ?? '').replaceAll('&quot;', '"'),
      );
    };
    expect(bodyOf('op-task-manager-functions-api-ManageTask')).toEqual({
      Title: 'string',
      Description: 'string',
      DueDate: 'string',
    });
    expect(bodyOf('op-task-manager-web-api-create-task')).toEqual({
      title: 'string',
      description: 'string',
      dueDate: 'string',
    });
  });

  it("Try it shows the answer's headers: a 429 after the API's five calls a minute, with its Retry-After", async () => {
    const { browser, page } = await signedIn();
    const form = {
      _csrf: csrfOf(page),
      operation: 'task-manager-functions-api/ManageTask',
      body: '{"Title":"x"}',
    };
    // rate-limit calls="5" renewal-period="60" on the API: at most six calls reach the limit.
    let tried = await browser.request(`${portal}/try`, { form });
    for (let calls = 1; calls < 6 && !tried.body.includes('id="status">429<'); calls++)
      tried = await browser.request(`${portal}/try`, { form });
    expect(tried.body).toContain('<strong id="status">429</strong> Too Many Requests');
    // The tab's title names the operation and its answer (two tabs, a screen reader's first words).
    expect(tried.body).toContain('<title>Try it: ManageTask, 429 Too Many Requests</title>');
    expect(tried.body).toContain('<h1>Try it: ManageTask</h1>');
    // The console stays: the same form, filled as sent, to send again.
    expect(tried.body).toMatch(/<textarea name="body"[^>]*>\{&quot;Title&quot;:&quot;x&quot;\}<\/textarea>/);
    expect(tried.body).toContain('aria-label="Try it: ManageTask">Try it</button>');
    expect(tried.body).toContain(`name="_csrf" value="${csrfOf(page)}"`);
    const headers = /<pre id="response-headers">([^<]*)<\/pre>/.exec(tried.body)?.[1] ?? '';
    const retryAfter = /^retry-after: (\d+)$/m.exec(headers)?.[1];
    expect(Number(retryAfter)).toBeGreaterThan(0);
    expect(headers).toMatch(/^content-type: application\/json$/m);
    // The gateway's answer, not the portal's connection to it: no hop-by-hop header.
    expect(headers).not.toMatch(/^(connection|keep-alive|transfer-encoding):/m);
    expect(tried.body).toContain(`Rate limit is exceeded. Try again in ${retryAfter} seconds.`);
    // The request as sent, its secrets masked: the headers and the body.
    expect(tried.body).toContain('Content-Type: application/json\n\n{&quot;Title&quot;:&quot;x&quot;}</pre>');
    expect(tried.body).not.toContain(stack.description.subscriptionKey);
  });

  it('refuses a callback whose state was forged, and one whose sign-in cookie was tampered with', async () => {
    const refusals = () => log().split('portal sign-in refused: no sign-in under way with this state').length;
    const before = refusals();
    const browser = new FormClient();
    const started = await browser.request(`${portal}/signin`);
    const state = new URL(started.location ?? '').searchParams.get('state') ?? '';
    // Another state of the same shape: no sign-in under way has it.
    const forgedState = `${state.slice(0, -1)}${state.endsWith('a') ? 'b' : 'a'}`;
    const forged = await browser.request(`${portal}/signin-aad?code=anything&state=${forgedState}`);
    expect(forged.status).toBe(400);
    expect(forged.body).toContain(`<p role="alert">${SIGN_IN_FAILED}</p>`);
    await waitFor('the refusal in the log', () => refusals() === before + 1);

    const other = new FormClient();
    const again = await other.request(`${portal}/signin`);
    const cookie = `portal.signin.${new URL(again.location ?? '').searchParams.get('state')}`;
    const value = other.cookies.get(cookie) ?? '';
    // Change one character of the signed value (the state inside): the signature no longer matches.
    other.cookies.set(cookie, `${value[0] === 'e' ? 'f' : 'e'}${value.slice(1)}`);
    const tampered = await other.request(
      `${portal}/signin-aad?code=anything&state=${new URL(again.location ?? '').searchParams.get('state')}`,
    );
    expect(tampered.status).toBe(400);
    await waitFor('the refusal in the log', () => refusals() === before + 2);
  });

  it('refuses Try it with a forged form token, a tampered session cookie, or no session', async () => {
    const { browser, page } = await signedIn();
    const form = { operation: 'task-manager-web-api/get-tasks' };
    const forged = await browser.request(`${portal}/try`, { form: { ...form, _csrf: 'forged' } });
    expect(forged.status).toBe(403);
    expect(forged.body).toContain(FORM_REFUSED);

    const session = browser.cookies.get('portal.session') ?? '';
    browser.cookies.set('portal.session', `${session.slice(0, -1)}${session.endsWith('A') ? 'B' : 'A'}`);
    const tampered = await browser.request(`${portal}/try`, { form: { ...form, _csrf: csrfOf(page) } });
    expect(tampered.status).toBe(401);
    expect(tampered.body).toContain(SIGN_IN_REQUIRED);
    expect((await browser.request(`${portal}/`)).body).toContain('id="sign-in"');

    const none = await new FormClient().request(`${portal}/try`, { form: { ...form, _csrf: csrfOf(page) } });
    expect(none.status).toBe(401);
    // The way on is offered: sign in (relative to /developer/try, so /developer/signin).
    for (const answer of [tampered, none])
      expect(answer.body).toContain('<a id="sign-in" href="signin">Sign in</a>');
  });

  it('refuses a form over 1 MiB with 413, and a form that is not url-encoded with 400, sending nothing', async () => {
    const { browser, page } = await signedIn();
    const before = log().split('POST /web/api/tasks').length;
    const big = await browser.request(`${portal}/try`, {
      form: {
        _csrf: csrfOf(page),
        operation: 'task-manager-web-api/create-task',
        body: 'x'.repeat(1024 * 1024),
      },
    });
    expect(big.status).toBe(413);
    expect(big.body).toContain('The form is larger than 1048576 bytes.');
    const json = await fetch(`${portal}/try`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        cookie: [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
      },
      body: JSON.stringify({ _csrf: csrfOf(page), operation: 'task-manager-web-api/create-task' }),
    });
    expect(json.status).toBe(400);
    expect(await json.text()).toContain(FORM_REFUSED);
    expect(log().split('POST /web/api/tasks').length).toBe(before);
  });

  it('signs out: the session ends and the provider is asked to sign out back to the portal', async () => {
    const { browser, page } = await signedIn();
    const forged = await browser.request(`${portal}/signout`, { form: { _csrf: 'forged' } });
    expect(forged.status).toBe(403);
    const out = await browser.request(`${portal}/signout`, { form: { _csrf: csrfOf(page) } });
    expect(out.status).toBe(303);
    const logout = new URL(out.location ?? '');
    expect(`${logout.origin}${logout.pathname}`).toBe(`${authUrl}/${secrets().tenantId}/oauth2/v2.0/logout`);
    expect(logout.searchParams.get('post_logout_redirect_uri')).toBe(`${portal}/`);
    expect(browser.cookies.has('portal.session')).toBe(false);
    // The post-logout URI is registered: the provider's confirmation page, not AADSTS50011.
    const confirm = await browser.request(logout.href);
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('Sign out');
    expect(confirm.body).not.toContain('AADSTS50011');
    expect((await browser.request(`${portal}/`)).body).toContain('id="sign-in"');
  });
});
