import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../emulators/core/testing.ts';
import { editArtifact, startBackend, startGateway, type TestGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';
const WEB_POLICY = 'policies/apis/task-manager-web-api.xml';

describe('gateway: reload on artifact change', () => {
  let backend: Awaited<ReturnType<typeof startBackend>>;
  let gw: TestGateway;
  const get = async () => {
    const key = (await gw.keys('task-manager-all-apis')).primaryKey;
    const response = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key } });
    await response.body?.cancel();
    return { status: response.status, path: backend.seen.at(-1)?.url };
  };
  /** Waits for the next log line (after those already there) that includes `text`. */
  const nextLog = (text: string) => {
    const from = gw.logs.length;
    return waitFor(`a log line with "${text}"`, () =>
      gw.logs.slice(from).find((line) => line.includes(text)),
    );
  };

  beforeAll(async () => {
    backend = await startBackend();
    gw = await startGateway({ functionApp: backend.url, webApp: backend.url });
  });
  afterAll(async () => {
    await gw?.stop();
    await backend?.close();
  });

  it('an edited policy applies to the next request', async () => {
    expect(await get()).toEqual({ status: 200, path: '/api/tasks' });
    const reloaded = nextLog('reloaded');
    editArtifact(gw.dir, WEB_POLICY, (text) =>
      text.replace('template="/api/tasks"', 'template="/api/v2/tasks"'),
    );
    await reloaded;
    expect(await get()).toEqual({ status: 200, path: '/api/v2/tasks' });
  });

  it('an edited OpenAPI document applies too', async () => {
    const reloaded = nextLog('reloaded');
    editArtifact(gw.dir, '../../openapi/gateway-web.json', (text) =>
      text.replace('"/api/tasks"', '"/api/todo"'),
    );
    await reloaded;
    expect((await get()).status).toBe(404);
  });

  it('an invalid edit keeps the last good configuration and logs why', async () => {
    editArtifact(gw.dir, '../../openapi/gateway-web.json', (text) =>
      text.replace('"/api/todo"', '"/api/tasks"'),
    );
    await nextLog('reloaded');
    const kept = nextLog('kept the last good configuration');
    editArtifact(gw.dir, WEB_POLICY, (text) => text.replace('<rewrite-uri', '<rewrite-url'));
    expect(await kept).toBe(
      'kept the last good configuration: system/gateway/policies/apis/task-manager-web-api.xml line 5, <rewrite-url>: this policy is not supported by the simulator',
    );
    expect(await get()).toEqual({ status: 200, path: '/api/v2/tasks' });
  });
});
