/**
 * Provider verification of the committed gateway pacts against the real gateway in front of the real
 * apps (the embedded stack). Provider states are set up through the stack's control API (the clock
 * moves the rate limit's window on) and through the published APIs themselves. TLS stays verified: the
 * verifier's proxy trusts the stack's CA (NODE_EXTRA_CA_CERTS).
 */
import { Verifier } from '@pact-foundation/pact';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { testDataDir } from '../emulators/core/testing.ts';
import type { Stack } from '../emulators/stack/launcher.ts';
import { startEmbeddedTarget } from './embedded.ts';
import { GatewayClient, SUBSCRIPTION_HEADER } from './gateway-client.ts';
import { FUNCTIONS_API, GATEWAY_CONSUMER, pactFile, WEB_API } from './pacts.ts';
import { advanceClock, type Target } from './target.ts';

const PAST_WINDOW_MS = 61_000;
const data = testDataDir();
let stack: Stack;
let target: Target;

beforeAll(async () => {
  ({ stack, target } = await startEmbeddedTarget(data.dir));
});
afterAll(async () => {
  await stack?.stop();
  data.remove();
});

const gateway = () => new GatewayClient(target.gatewayUrl ?? '', target.subscriptionKey);

const stateHandlers = {
  'a fresh rate-limit window': () => advanceClock(target, PAST_WINDOW_MS),
  'the subscription has made 5 calls in the last 60 seconds': async () => {
    await advanceClock(target, PAST_WINDOW_MS);
    for (let call = 0; call < 5; call++) {
      const answer = await gateway().createTask({});
      if (answer.status !== 400) throw new Error(`call ${call + 1} answered ${answer.status}, expected 400`);
    }
  },
  'the web app holds a task': async () => {
    const answer = await gateway().createWebTask({ title: 'held by the web app', description: 'state' });
    if (answer.status !== 200) throw new Error(`creating the task answered ${answer.status}`);
  },
};

describe('the gateway honours its consumers’ pacts', () => {
  it.each([FUNCTIONS_API, WEB_API])('%s', async (provider) => {
    await new Verifier({
      provider,
      providerBaseUrl: target.gatewayUrl,
      pactUrls: [pactFile(GATEWAY_CONSUMER, provider)],
      stateHandlers,
      // The consumer sent a placeholder key; a request with a key gets the stack's real one.
      requestFilter: (req, _res, next) => {
        if (req.headers[SUBSCRIPTION_HEADER.toLowerCase()])
          req.headers[SUBSCRIPTION_HEADER.toLowerCase()] = target.subscriptionKey;
        next();
      },
      validateSSL: true,
      changeOrigin: true,
      logLevel: 'warn',
    }).verifyProvider();
  });
});
