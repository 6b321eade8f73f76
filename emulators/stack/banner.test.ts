import { describe, expect, it } from 'vitest';
import { banner } from './banner.ts';
import type { StackDescription } from './stackfile.ts';

/** What stack.json holds for a stack running `endpoints` (the fields the banner does not read left out). */
const described = (
  endpoints: Record<string, Record<string, string>>,
  more: Partial<StackDescription> = {},
): StackDescription =>
  ({
    dataDir: '/data',
    inMemory: false,
    controlUrl: 'http://127.0.0.1:7070',
    authUrl: 'https://127.0.0.1:8400',
    apps: {},
    endpoints,
    testUsers: [{ userPrincipalName: 'alice@example.test', password: 'secret', displayName: 'Alice' }],
    ...more,
  }) as StackDescription;

describe('the ready banner', () => {
  it('lists the addresses of what runs, and the test users, but no key or password', () => {
    const text = banner(
      described(
        { identity: { authority: 'https://127.0.0.1:8400' }, blob: { blob: 'http://127.0.0.1:10000/x' } },
        { baseUrl: 'http://127.0.0.1:7071' },
      ),
      1234.4,
    );
    expect(text).toBe(
      [
        '',
        'taskstack is ready (1234 ms)',
        '  Functions (baseUrl)  http://127.0.0.1:7071',
        '  Identity (authUrl)   https://127.0.0.1:8400',
        '  Blob storage         http://127.0.0.1:10000/x',
        '  Control API          http://127.0.0.1:7070',
        '  test user            alice@example.test (password in stack.json)',
        '  keys                 in stack.json (functionKey, masterKey, subscriptionKey)',
        '  stack.json           /data/stack.json',
        '  Ctrl-C stops everything.',
        '',
      ].join('\n'),
    );
  });

  it('lists each Event Grid topic, as it lists the other services', () => {
    const topic = 'https://127.0.0.1:8700/taskcreatedtopic/api/events';
    const text = banner(described({ eventgrid: { taskcreatedtopic: topic } }), 10);
    expect(text).toContain(`  Event Grid taskcreatedtopic  ${topic}\n`);
  });

  it('leaves out the identity provider and its test users when --components left it out', () => {
    const text = banner(described({ gateway: { gatewayUrl: 'https://127.0.0.1:8600' } }), 10);
    expect(text).not.toContain('Identity');
    expect(text).not.toContain('test user');
    expect(text).toContain('  Control API  http://127.0.0.1:7070');
  });
});
