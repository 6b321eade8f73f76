import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editArtifact, startBackend, startGateway, type TestGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';
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

  it('a key that is sent is ignored, as APIM\'s subscriptions article says ("treated the same as a request without a subscription key"): no 401 for a wrong key, no subscription for a valid one', async () => {
    expect((await get()).status).toBe(200);
    expect(await get({ [KEY]: 'c'.repeat(32) })).toEqual({ status: 200, body: '' });
    const functionsOnly = (await gw.keys('task-manager-functions')).primaryKey;
    expect((await get({ [KEY]: functionsOnly })).status).toBe(200);
    const webKey = (await gw.keys('task-manager-web')).primaryKey;
    const logged = gw.logs.length;
    expect((await get({ [KEY]: webKey })).status).toBe(200);
    const log = gw.logs.slice(logged).join('\n');
    expect(log).toContain('subscription: key ignored: the API requires no subscription');
    expect(log).not.toContain('task-manager-web (primary key');
  });

  it('rate-limit, which counts per subscription, counts none of its calls, with a key or without (APIM applies it to subscriptions only)', async () => {
    const allKey = (await gw.keys('task-manager-all-apis')).primaryKey;
    for (let i = 0; i < 3; i++) {
      expect((await get()).status).toBe(200);
      expect((await get({ [KEY]: allKey })).status).toBe(200);
    }
  });
});
