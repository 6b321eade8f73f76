/** Keys (authLevel function/admin, host/function/master keys, set/renew, the keys CLI) and the admin API. */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError, NotFoundError } from '../core/ipc.ts';
import type { StackSecrets } from '../core/secrets.ts';
import { testContext, testDataDir } from '../core/testing.ts';
import type { ComponentUnderTest } from '../stack/test-support.ts';
import { keysCommand } from './cli.ts';
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

const get = (path: string, init?: RequestInit) => fetch(`${base}${path}`, init);

describe('keys', () => {
  const functionKey = async (fn: string) =>
    ((await host.action('listKeys', { function: fn })) as { default: string }).default;

  it('requires a key for authLevel function: 401 when missing or wrong', async () => {
    expect((await get('/api/keyed')).status).toBe(401);
    expect((await get('/api/keyed?code=wrong')).status).toBe(401);
    expect((await get('/api/keyed', { headers: { 'x-functions-key': 'wrong' } })).status).toBe(401);
  });

  it('accepts the host key, the master key and the function key, from code or x-functions-key', async () => {
    expect((await get(`/api/keyed?code=${secrets.functionKey}`)).status).toBe(200);
    expect((await get('/api/keyed', { headers: { 'x-functions-key': secrets.functionKey } })).status).toBe(
      200,
    );
    expect((await get(`/api/keyed?code=${secrets.masterKey}`)).status).toBe(200);
    expect((await get(`/api/keyed?code=${encodeURIComponent(await functionKey('keyed'))}`)).status).toBe(200);
    // Another function's key is not this function's key.
    expect((await get(`/api/keyed?code=${encodeURIComponent(await functionKey('hello'))}`)).status).toBe(401);
  });

  it('reads the code query parameter in any case, as ASP.NET reads query names', async () => {
    for (const name of ['CODE', 'Code', 'cOdE']) {
      expect((await get(`/api/keyed?${name}=${secrets.functionKey}`)).status, name).toBe(200);
      expect((await get(`/api/keyed?${name}=wrong`)).status, name).toBe(401);
      expect((await get(`/admin/host/status?${name}=${secrets.masterKey}`)).status, name).toBe(200);
    }
  });

  it('takes the key from x-functions-key whenever that header is sent (an empty one too, its first line if repeated), the code query only without it', async () => {
    const withHeader = (values: string[], path: string) =>
      new Promise<number>((resolve, reject) => {
        // Separate header lines, as fetch cannot send them.
        request(`${base}${path}`, { headers: { 'x-functions-key': values } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
          .on('error', reject)
          .end();
      });
    const valid = secrets.functionKey;
    expect(await withHeader([''], `/api/keyed?code=${valid}`)).toBe(401);
    expect(await withHeader([valid, 'wrong'], '/api/keyed')).toBe(200);
    expect(await withHeader(['wrong', valid], '/api/keyed')).toBe(401);
    expect(await withHeader([''], `/admin/host/status?code=${secrets.masterKey}`)).toBe(401);
  });

  it('requires the master key for authLevel admin', async () => {
    expect((await get(`/api/master-only?code=${secrets.functionKey}`)).status).toBe(401);
    expect((await get(`/api/master-only?code=${secrets.masterKey}`)).status).toBe(200);
  });

  it('sets and renews keys through the actions; old values stop working', async () => {
    const set = (await host.action('setKey', {
      function: 'keyed',
      keyName: 'ci',
      keyValue: 'a-key-chosen-by-ci-0123456789',
    })) as {
      value: string;
    };
    expect(set).toEqual({ name: 'ci', value: 'a-key-chosen-by-ci-0123456789' });
    expect((await get(`/api/keyed?code=${set.value}`)).status).toBe(200);
    const renewed = (await host.action('renewKey', { function: 'keyed', keyName: 'ci' })) as {
      value: string;
    };
    expect(renewed.value).not.toBe(set.value);
    expect((await get(`/api/keyed?code=${set.value}`)).status).toBe(401);
    expect((await get(`/api/keyed?code=${renewed.value}`)).status).toBe(200);
    // The control API answers 404 for the one, 400 for the others.
    const unknown = host.action('listKeys', { function: 'nope' });
    await expect(unknown).rejects.toThrow(new NotFoundError('no function named nope'));
    await expect(unknown).rejects.toBeInstanceOf(NotFoundError);
    const badName = host.action('setKey', { keyName: 'bad name!' });
    await expect(badName).rejects.toThrow(
      new InvalidInputError('✖ key names are letters, digits, _ . -\n  → at keyName'),
    );
    await expect(badName).rejects.toBeInstanceOf(InvalidInputError);
    const both = host.action('setKey', { keyName: 'x', function: 'keyed', keyType: 'masterKey' });
    await expect(both).rejects.toBeInstanceOf(InvalidInputError);
  });

  describe('keys CLI against a control API', () => {
    let control: Server;
    let url: string;
    beforeAll(async () => {
      // The launcher's control API shape: POST /components/functions/<action>, key header, JSON in and out.
      control = createServer(async (req, res) => {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        const action = /^\/components\/functions\/(\w+)$/.exec(req.url ?? '')?.[1];
        if (req.headers['x-taskstack-key'] !== 'control-key' || !action) return void res.writeHead(401).end();
        try {
          const result = await host.action(action, JSON.parse(Buffer.concat(chunks).toString() || '{}'));
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result ?? null));
        } catch (error) {
          res.writeHead(500).end(JSON.stringify({ error: (error as Error).message }));
        }
      });
      await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(control.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => control.close(() => resolve())));

    it('lists host keys and function keys as az prints them, sets and renews', async () => {
      const ctl = () => ({ url, key: 'control-key' });
      const hostKeys = JSON.parse(await keysCommand(['list'], ctl));
      expect(hostKeys).toEqual({
        functionKeys: { default: secrets.functionKey },
        masterKey: secrets.masterKey,
        systemKeys: { eventgrid_extension: secrets.eventGridExtensionKey },
      });
      const fnKeys = JSON.parse(await keysCommand(['functions', 'keys', 'list', '--function', 'keyed'], ctl));
      expect(Object.keys(fnKeys)).toContain('default');
      const added = JSON.parse(
        await keysCommand(['set', '--key-name', 'extra', '--key-value', 'host-extra-key-0123456789'], ctl),
      );
      expect(added).toEqual({ name: 'extra', value: 'host-extra-key-0123456789' });
      expect((await get('/api/keyed?code=host-extra-key-0123456789')).status).toBe(200);
      const renewed = JSON.parse(
        await keysCommand(['renew', '--function', 'keyed', '--key-name', 'default'], ctl),
      );
      expect((await get(`/api/keyed?code=${encodeURIComponent(renewed.value)}`)).status).toBe(200);
      expect((await get(`/api/keyed?code=${encodeURIComponent(fnKeys.default)}`)).status).toBe(401);
      await expect(keysCommand(['list', '--function', 'nope'], ctl)).rejects.toThrow(
        'no function named nope',
      );
      await expect(keysCommand(['set'], ctl)).rejects.toThrow('--key-name is required');
      await expect(keysCommand(['frobnicate'], ctl)).rejects.toThrow('usage:');
      // parseArgs' refusal, its first sentence only (the rest is advice about `--`).
      await expect(keysCommand(['list', '--bogus'], ctl)).rejects.toThrow(
        /^Unknown option '--bogus'\nusage: functions keys list/,
      );
    });
  });
});

describe('admin API', () => {
  const admin = (path: string, init: RequestInit = {}) =>
    get(path, { ...init, headers: { 'x-functions-key': secrets.masterKey, ...init.headers } });

  it('requires the master key: 401 without a known key, 403 for a host or system key (AdminAuthLevel)', async () => {
    expect((await get('/admin/functions')).status).toBe(401);
    expect((await get('/admin/functions', { headers: { 'x-functions-key': 'wrong' } })).status).toBe(401);
    for (const key of [secrets.functionKey, secrets.eventGridExtensionKey]) {
      expect((await get('/admin/host/status', { headers: { 'x-functions-key': key } })).status).toBe(403);
    }
  });

  it('answers the health ping without a key (GET or POST), as the runtime does, and nothing else of it', async () => {
    for (const method of ['GET', 'POST']) {
      const ping = await get('/admin/host/ping', { method });
      expect(ping.status, method).toBe(200);
      expect(ping.headers.get('cache-control'), method).toBe('no-store,no-cache');
      expect(await ping.text(), method).toBe('');
    }
    expect((await get('/admin/host/ping', { method: 'DELETE' })).status).toBe(401);
  });

  it('lists functions with their bindings and reports host status', async () => {
    const functions = (await (await admin('/admin/functions')).json()) as {
      name: string;
      invoke_url_template: string;
      config: { bindings: { type: string }[] };
    }[];
    const hello = functions.find((fn) => fn.name === 'hello');
    expect(hello?.invoke_url_template).toBe(`${base}/api/hello/{name?}`);
    expect(hello?.config.bindings.map((b) => b.type)).toEqual(['httpTrigger', 'http']);
    const status = await (await admin('/admin/host/status')).json();
    expect(status).toMatchObject({ state: 'Running' });
  });

  it('refuses to run an HTTP function or an unknown one by hand, and a body that is not {"input": …}', async () => {
    expect((await admin('/admin/functions/hello', { method: 'POST', body: '{"input":""}' })).status).toBe(
      400,
    );
    expect((await admin('/admin/functions/nope', { method: 'POST', body: '{"input":""}' })).status).toBe(404);
    expect((await admin('/admin/functions/hello', { method: 'POST', body: 'not json' })).status).toBe(400);
  });
});
