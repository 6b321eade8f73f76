/**
 * Subscription keys and states. Keys are never stored in the repository: the All-APIs subscription's
 * primary key is the stack's `subscriptionKey`, every other key is derived from the data directory's
 * `gatewayKeySeed` (HMAC of subscription name and key slot), so a data directory keeps its keys across
 * restarts. States (active, suspended, cancelled…) start as the artifacts say and are changed at run
 * time through an action, persisted in the state directory. So is the time each subscription started
 * (first seen by this data directory), from which its quota periods run, as APIM's run from the
 * subscription's start.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { readJsonIfExists, writeFileAtomic } from '../emulators/core/files.ts';
import type { SharedSecrets, StackSecrets } from '../emulators/core/secrets.ts';
import type { SubscriptionDefinition } from './artifacts.ts';
import type { SubscriptionState } from './schemas.ts';

export interface SubscriptionKeys {
  primaryKey: string;
  secondaryKey: string;
}

export function subscriptionKeys(
  subscription: Pick<SubscriptionDefinition, 'name' | 'scope'>,
  secrets: Pick<StackSecrets, 'subscriptionKey' | 'gatewayKeySeed'>,
): SubscriptionKeys {
  const derive = (slot: string) =>
    createHmac('sha256', secrets.gatewayKeySeed)
      .update(`${subscription.name}/${slot}`)
      .digest('hex')
      .slice(0, 32);
  return {
    primaryKey: subscription.scope === '/apis' ? secrets.subscriptionKey : derive('primary'),
    secondaryKey: derive('secondary'),
  };
}

export interface Caller {
  subscription: SubscriptionDefinition;
  slot: 'primary' | 'secondary';
  key: string;
  /** When the subscription started (stack ms): quota's periods are laid from it. */
  started: number;
}

const same = (x: Buffer, y: Buffer) => x.length === y.length && timingSafeEqual(x, y);

export function createSubscriptionRegistry(
  secrets: SharedSecrets,
  stateDir: string | undefined,
  clock: { now(): number },
) {
  const statePath = stateDir && join(stateDir, 'subscription-states.json');
  const startsPath = stateDir && join(stateDir, 'subscription-starts.json');
  // Deriving costs two HMACs: once per subscription definition (a reload makes new ones), kept as the
  // bytes every call's key is compared with.
  const derived = new WeakMap<SubscriptionDefinition, { primary: Buffer; secondary: Buffer }>();
  const keysOf = (subscription: SubscriptionDefinition) => {
    let keys = derived.get(subscription);
    if (!keys) {
      const { primaryKey, secondaryKey } = subscriptionKeys(subscription, secrets);
      keys = { primary: Buffer.from(primaryKey), secondary: Buffer.from(secondaryKey) };
      derived.set(subscription, keys);
    }
    return keys;
  };
  const states = new Map<string, string>(
    Object.entries(readJsonIfExists<Record<string, string>>(statePath ?? '') ?? {}),
  );
  const starts = new Map<string, number>(
    Object.entries(readJsonIfExists<Record<string, number>>(startsPath ?? '') ?? {}).filter(([, time]) =>
      Number.isFinite(time),
    ),
  );
  const startOf = (subscription: SubscriptionDefinition) => starts.get(subscription.name) ?? clock.now();
  return {
    /** Records the start of subscriptions seen for the first time (at start and on each reload). */
    started(subscriptions: SubscriptionDefinition[]) {
      const fresh = subscriptions.filter((subscription) => !starts.has(subscription.name));
      for (const subscription of fresh) starts.set(subscription.name, clock.now());
      if (fresh.length && startsPath)
        writeFileAtomic(startsPath, JSON.stringify(Object.fromEntries(starts), null, 2));
    },
    /** The subscription a key belongs to; every key is compared (constant time), so timing tells nothing. */
    find(key: string, subscriptions: SubscriptionDefinition[]): Caller | undefined {
      let found: Caller | undefined;
      const sent = Buffer.from(key);
      for (const subscription of subscriptions) {
        const keys = keysOf(subscription);
        if (same(sent, keys.primary))
          found = { subscription, slot: 'primary', key, started: startOf(subscription) };
        if (same(sent, keys.secondary))
          found = { subscription, slot: 'secondary', key, started: startOf(subscription) };
      }
      return found;
    },
    state(subscription: SubscriptionDefinition): string {
      return states.get(subscription.name) ?? subscription.state;
    },
    setState(name: string, state: SubscriptionState) {
      states.set(name, state);
      if (statePath) writeFileAtomic(statePath, JSON.stringify(Object.fromEntries(states), null, 2));
    },
  };
}
export type SubscriptionRegistry = ReturnType<typeof createSubscriptionRegistry>;
