import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testContext, testDataDir } from '../emulators/core/testing.ts';
import { startBackend, startGateway } from './testing.ts';

const KEY = 'Ocp-Gateway-Subscription-Key';

describe('gateway: subscription states', () => {
  it('a suspension survives a restart on the same data directory; unknown names and states are refused', async () => {
    const data = testDataDir();
    const backend = await startBackend();
    const context = await testContext(data.dir);
    const start = () => startGateway({ functionApp: backend.url, webApp: backend.url, context });
    try {
      let gw = await start();
      const key = (await gw.keys('task-manager-web')).primaryKey;
      await gw.gateway.actions?.setSubscriptionState?.({ name: 'task-manager-web', state: 'suspended' });
      await expect(
        gw.gateway.actions?.setSubscriptionState?.({ name: 'nobody', state: 'active' }),
      ).rejects.toThrow('no subscription nobody');
      await expect(
        gw.gateway.actions?.setSubscriptionState?.({ name: 'task-manager-web', state: 'paused' }),
      ).rejects.toThrow();
      await gw.stop();
      gw = await start();
      const response = await fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key } });
      expect(response.status).toBe(401);
      await response.body?.cancel();
      const listed = (await gw.gateway.actions?.subscriptions?.(undefined)) as {
        name: string;
        state: string;
      }[];
      expect(listed.find((subscription) => subscription.name === 'task-manager-web')?.state).toBe(
        'suspended',
      );
      await gw.stop();
    } finally {
      await backend.close();
      data.remove();
    }
  });

  it("a subscription's start, from which its quota periods run, survives a restart on the same data directory", async () => {
    const data = testDataDir();
    const backend = await startBackend();
    const context = await testContext(data.dir);
    const prepare = (dir: string) => {
      mkdirSync(join(dir, 'policies', 'products'));
      const policy =
        '<policies>\n<inbound>\n<quota calls="1" renewal-period="3600" />\n</inbound>\n</policies>\n';
      writeFileSync(join(dir, 'policies', 'products', 'task-manager.xml'), policy);
    };
    const start = () => startGateway({ functionApp: backend.url, webApp: backend.url, context, prepare });
    try {
      let gw = await start();
      await gw.stop();
      // Restarted half an hour later: the subscription started then, not now.
      context.clock.advance(1_800_000);
      gw = await start();
      const key = (await gw.keys('task-manager-product')).primaryKey;
      const call = () => fetch(`${gw.url}/web/api/tasks`, { headers: { [KEY]: key } });
      expect((await call()).status).toBe(200);
      const refused = await call();
      expect(refused.status).toBe(403);
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(1800);
      expect(await refused.text()).toMatch(/Quota will be replenished in 00:(30:00|29:[0-5]\d)\./);
      await gw.stop();
    } finally {
      await backend.close();
      data.remove();
    }
  });
});
