import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editArtifact, startBackend, startGateway, type TestGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';
const INVALID =
  '{ "statusCode": 401, "message": "Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription." }';

/** TaskManagerWebAPI with "Subscription required" off (APIM's subscriptionRequired: false) and 1 call a minute. */
describe('gateway: an API that requires no subscription', () => {
  let backend: Awaited<ReturnType<typeof startBackend>>;
  let gw: TestGateway;
  const get = async (headers: Record<string, string> = {}) => {
    const response = await fetch(`${gw.url}/web/api/tasks`, { headers });
    return { status: response.status, body: await response.text() };
  };

  beforeAll(async () => {
    backend = await startBackend();
    gw = await startGateway({
      functionApp: backend.url,
      webApp: backend.url,
      prepare: (dir) => {
        editArtifact(dir, 'apis/task-manager-web-api.json', (text) =>
          text.replace('"subscriptionRequired": true', '"subscriptionRequired": false'),
        );
        editArtifact(dir, 'policies/apis/task-manager-web-api.xml', (text) =>
          text.replace('<rewrite-uri', '<rate-limit calls="1" renewal-period="60" />\n    <rewrite-uri'),
        );
      },
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await backend?.close();
  });

  it('a call without a key passes; a key that is sent is still checked: refused when invalid or not covering the API, its subscription known when valid', async () => {
    expect((await get()).status).toBe(200);
    expect(await get({ [KEY]: 'c'.repeat(32) })).toEqual({ status: 401, body: INVALID });
    const functionsOnly = (await gw.keys('task-manager-functions')).primaryKey;
    expect(await get({ [KEY]: functionsOnly })).toEqual({ status: 401, body: INVALID });
    const webKey = (await gw.keys('task-manager-web')).primaryKey;
    const logged = gw.logs.length;
    expect((await get({ [KEY]: webKey })).status).toBe(200);
    expect(gw.logs.slice(logged).join('\n')).toContain('subscription: task-manager-web (primary key');
  });

  it('rate-limit applies only to calls with a subscription, as APIM documents: anonymous calls are not counted', async () => {
    for (let i = 0; i < 3; i++) expect((await get()).status).toBe(200);
    const allKey = (await gw.keys('task-manager-all-apis')).primaryKey;
    expect((await get({ [KEY]: allKey })).status).toBe(200);
    expect((await get({ [KEY]: allKey })).status).toBe(429);
  });
});
