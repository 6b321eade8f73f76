/**
 * The runtime's key management API (azure-functions-host KeysController) over HTTP: shapes, statuses and
 * texts as the runtime's, on the same keys `taskstack functions keys` manages, kept across a restart.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StackSecrets } from '../core/secrets.ts';
import { testContext, testDataDir } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import { startCjsHost } from './test/helpers.ts';

const data = testDataDir();
const logFile = join(data.dir, 'logs', 'functions.jsonl');
let host: ComponentUnderTest;
let base: string;
let secrets: StackSecrets;

beforeAll(async () => {
  host = await startCjsHost(data.dir, logFile);
  base = host.endpoints.baseUrl as string;
  secrets = (await testContext(data.dir)).secrets;
});

afterAll(async () => {
  await host?.stop();
  data.remove();
});

/** A request with the master key (or `key`), JSON body when given. */
const admin = (path: string, init: { method?: string; body?: unknown; key?: string; accept?: string } = {}) =>
  fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      'x-functions-key': init.key ?? secrets.masterKey,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.accept ? { accept: init.accept } : {}),
    },
    body:
      init.body === undefined
        ? undefined
        : typeof init.body === 'string'
          ? init.body
          : JSON.stringify(init.body),
  });
const self = (path: string) => [{ rel: 'self', href: `${base}${path}` }];
const call = (key: string) => fetch(`${base}/api/keyed?code=${encodeURIComponent(key)}`);

describe('function keys', () => {
  it('lists a function keys as the runtime does, the same keys the keys action lists', async () => {
    const response = await admin('/admin/functions/keyed/keys');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const listed = (await host.action('listKeys', { function: 'keyed' })) as Record<string, string>;
    expect(await response.json()).toEqual({
      keys: Object.entries(listed).map(([name, value]) => ({ name, value })),
      links: self('/admin/functions/keyed/keys'),
    });
  });

  it('gets one key (name in any case), 404 for an unknown key or function', async () => {
    const listed = (await host.action('listKeys', { function: 'keyed' })) as Record<string, string>;
    const response = await admin('/admin/functions/keyed/keys/DEFAULT');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      name: 'DEFAULT',
      value: listed.default,
      links: self('/admin/functions/keyed/keys/DEFAULT'),
    });
    for (const path of [
      '/admin/functions/keyed/keys/nope',
      '/admin/functions/nope/keys',
      '/admin/functions/nope/keys/default',
    ]) {
      const missing = await admin(path);
      expect(missing.status, path).toBe(404);
      expect(await missing.text(), path).toBe('');
    }
    for (const method of ['PUT', 'POST', 'DELETE']) {
      const body = method === 'PUT' ? { name: 'k', value: 'some-value-0123456789' } : undefined;
      expect((await admin('/admin/functions/nope/keys/k', { method, body })).status, method).toBe(404);
    }
  });

  it('creates a key with a value (PUT, 201 and Location), updates it (200); it opens the function', async () => {
    const path = '/admin/functions/keyed/keys/fromapi';
    const created = await admin(path, {
      method: 'PUT',
      body: { name: 'fromapi', value: 'api-chosen-value-0123456789' },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(`${base}${path}`);
    expect(await created.json()).toEqual({
      name: 'fromapi',
      value: 'api-chosen-value-0123456789',
      links: self(path),
    });
    expect((await call('api-chosen-value-0123456789')).status).toBe(200);

    const updated = await admin(path, { method: 'PUT', body: { value: 'api-updated-value-0123456789' } });
    expect(updated.status).toBe(200);
    expect(updated.headers.get('location')).toBeNull();
    expect(await updated.json()).toEqual({
      name: 'fromapi',
      value: 'api-updated-value-0123456789',
      links: self(path),
    });
    expect((await call('api-chosen-value-0123456789')).status).toBe(401);
    expect((await call('api-updated-value-0123456789')).status).toBe(200);
    // The one store: the keys action sees what the API wrote.
    expect(await host.action('listKeys', { function: 'keyed' })).toMatchObject({
      fromapi: 'api-updated-value-0123456789',
    });
  });

  it('generates a value on POST (201 when new, 200 with a new value when it exists)', async () => {
    const path = '/admin/functions/keyed/keys/generated';
    const first = await admin(path, { method: 'POST' });
    expect(first.status).toBe(201);
    const { value } = (await first.json()) as { value: string };
    expect(value).toMatch(/^[\w-]{40,}$/);
    expect((await call(value)).status).toBe(200);
    const again = await admin(path, { method: 'POST' });
    expect(again.status).toBe(200);
    const renewed = ((await again.json()) as { value: string }).value;
    expect(renewed).not.toBe(value);
    expect((await call(value)).status).toBe(401);
    expect((await call(renewed)).status).toBe(200);
  });

  it('deletes a key (204, then 404); the key stops working', async () => {
    const path = '/admin/functions/keyed/keys/doomed';
    expect((await admin(path, { method: 'PUT', body: { value: 'doomed-value-0123456789' } })).status).toBe(
      201,
    );
    expect((await call('doomed-value-0123456789')).status).toBe(200);
    const deleted = await admin(path, { method: 'DELETE' });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe('');
    expect((await call('doomed-value-0123456789')).status).toBe(401);
    expect((await admin(path, { method: 'DELETE' })).status).toBe(404);
    expect((await admin(path)).status).toBe(404);
  });

  it('refuses a PUT without a value with the runtime text, as text or as JSON', async () => {
    const path = '/admin/functions/keyed/keys/novalue';
    for (const body of [{ name: 'novalue' }, 'not json', '', { value: null }, { value: '' }]) {
      const response = await admin(path, { method: 'PUT', body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await response.text()).toBe('Invalid key value');
    }
    const json = await admin(path, { method: 'PUT', body: {}, accept: 'application/json' });
    expect(json.status).toBe(400);
    expect(await json.text()).toBe('"Invalid key value"');
    expect((await admin(path)).status).toBe(404);
  });
});

describe('host keys and the master key', () => {
  it('lists the host function keys (keys and functionkeys) and the system keys, master excluded', async () => {
    for (const scope of ['keys', 'functionkeys']) {
      const response = await admin(`/admin/host/${scope}`);
      expect(response.status).toBe(200);
      const body = (await response.json()) as { keys: { name: string; value: string }[]; links: unknown };
      expect(body.keys).toContainEqual({ name: 'default', value: secrets.functionKey });
      expect(body.links).toEqual(self(`/admin/host/${scope}`));
    }
    expect(await (await admin('/admin/host/systemkeys')).json()).toEqual({
      keys: [{ name: 'eventgrid_extension', value: secrets.eventGridExtensionKey }],
      links: self('/admin/host/systemkeys'),
    });
    expect(await (await admin('/admin/host/systemkeys/eventgrid_extension')).json()).toEqual({
      name: 'eventgrid_extension',
      value: secrets.eventGridExtensionKey,
      links: self('/admin/host/systemkeys/eventgrid_extension'),
    });
  });

  it('reads the master key as the system key _master only', async () => {
    expect(await (await admin('/admin/host/systemkeys/_master')).json()).toEqual({
      name: '_master',
      value: secrets.masterKey,
      links: self('/admin/host/systemkeys/_master'),
    });
    expect((await admin('/admin/host/keys/_master')).status).toBe(404);
  });

  it('creates, updates and deletes host keys, which open every function', async () => {
    const path = '/admin/host/keys/hostapi';
    expect((await admin(path, { method: 'PUT', body: { value: 'host-api-value-0123456789' } })).status).toBe(
      201,
    );
    expect((await call('host-api-value-0123456789')).status).toBe(200);
    expect((await admin(path, { method: 'DELETE' })).status).toBe(204);
    expect((await call('host-api-value-0123456789')).status).toBe(401);
    const system = await admin('/admin/host/systemkeys/my_extension', { method: 'POST' });
    expect(system.status).toBe(201);
    const { value } = (await system.json()) as { value: string };
    // A system key is not a function key.
    expect((await call(value)).status).toBe(401);
    expect((await admin('/admin/host/systemkeys/my_extension', { method: 'DELETE' })).status).toBe(204);
  });

  it('never deletes the master key, in any scope or case: 400 with the runtime text', async () => {
    for (const path of [
      '/admin/host/keys/_master',
      '/admin/host/systemkeys/_MASTER',
      '/admin/functions/keyed/keys/_master',
    ]) {
      const response = await admin(path, { method: 'DELETE' });
      expect(response.status, path).toBe(400);
      expect(await response.text(), path).toBe('Cannot delete System Key.');
    }
    expect((await admin('/admin/host/status')).status).toBe(200);
  });

  it('requires the master key: 401 without a known key, 403 with a host or system key', async () => {
    for (const [method, path] of [
      ['GET', '/admin/functions/keyed/keys'],
      ['GET', '/admin/host/keys'],
      ['GET', '/admin/host/systemkeys/_master'],
      ['POST', '/admin/host/keys/intruder'],
      ['DELETE', '/admin/functions/keyed/keys/default'],
    ] as const) {
      expect((await fetch(`${base}${path}`, { method })).status, `${method} ${path}`).toBe(401);
      expect((await admin(path, { method, key: 'wrong' })).status, `${method} ${path}`).toBe(401);
      expect((await admin(path, { method, key: secrets.functionKey })).status, `${method} ${path}`).toBe(403);
      expect(
        (await admin(path, { method, key: secrets.eventGridExtensionKey })).status,
        `${method} ${path}`,
      ).toBe(403);
    }
    expect((await admin('/admin/host/keys/intruder')).status).toBe(404);
  });
});

describe('a restart', () => {
  it('keeps keys made over the API, a new master key included (PUT _master sets it, as the runtime)', async () => {
    expect(
      (
        await admin('/admin/functions/keyed/keys/kept', {
          method: 'PUT',
          body: { value: 'kept-value-0123456789' },
        })
      ).status,
    ).toBe(201);
    const master = await admin('/admin/host/keys/_master', {
      method: 'PUT',
      body: { value: 'new-master-value-0123456789' },
    });
    expect(master.status).toBe(200);
    expect(await master.json()).toEqual({
      name: '_master',
      value: 'new-master-value-0123456789',
      links: self('/admin/host/keys/_master'),
    });
    expect((await admin('/admin/host/status')).status).toBe(401);
    expect((await admin('/admin/host/status', { key: 'new-master-value-0123456789' })).status).toBe(200);

    await host.stop();
    await host.start();
    base = host.endpoints.baseUrl as string;
    expect((await call('kept-value-0123456789')).status).toBe(200);
    expect((await admin('/admin/host/status')).status).toBe(401);
    const renewed = await admin('/admin/host/keys/_master', {
      method: 'POST',
      key: 'new-master-value-0123456789',
    });
    expect(renewed.status).toBe(201);
    const { value } = (await renewed.json()) as { value: string };
    expect((await admin('/admin/host/status', { key: value })).status).toBe(200);
    expect((await admin('/admin/host/status', { key: 'new-master-value-0123456789' })).status).toBe(401);
    expect(await host.action('listKeys')).toMatchObject({ masterKey: value });
  });
});
