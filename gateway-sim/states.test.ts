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
});
