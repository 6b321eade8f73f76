import { describe, expect, it } from 'vitest';
import { partitionForKey } from './partition-key.ts';

describe('partition key hash', () => {
  // Expected values from the SDK's own mapper (@azure/event-hubs impl/partitionKeyToIdMapper), which
  // mirrors the service: every length class of lookup3 (empty, tail only, exactly 12, multi-block, UTF-8).
  it.each([
    ['', 0, 0],
    ['a', 0, 28],
    ['hello', 1, 23],
    ['task-1', 1, 7],
    ['twelve chars', 1, 23],
    ['a partition key longer than twelve bytes ✓', 0, 22],
  ])('maps %j to %i of 2 and %i of 32 partitions', (key, ofTwo, ofThirtyTwo) => {
    expect(partitionForKey(key, 2)).toBe(ofTwo);
    expect(partitionForKey(key, 32)).toBe(ofThirtyTwo);
  });
});
