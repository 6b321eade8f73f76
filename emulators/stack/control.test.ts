/**
 * The control API as a script meets it with wrong paths and bodies: each gets its status and a one-line
 * error, never an object's inherited members taken for actions nor a schema's JSON dump.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDataDir } from '../core/testing.ts';
import { CONTROL_KEY_HEADER } from './control.ts';
import { type Stack, start } from './launcher.ts';

const data = testDataDir();
let stack: Stack;

beforeAll(async () => {
  stack = await start({ dataDir: data.dir, ports: 'free', console: false, components: ['keyvault'] });
});

afterAll(async () => {
  await stack?.stop();
  data.remove();
});

/** POSTs `body` (text as sent) to the control API with the master key: status and JSON answer. */
async function post(path: string, body?: string) {
  const response = await fetch(`${stack.description.controlUrl}${path}`, {
    method: 'POST',
    headers: { [CONTROL_KEY_HEADER]: stack.description.masterKey },
    body,
  });
  return { status: response.status, body: await response.json() };
}

describe('the control API', () => {
  it.each([
    'constructor',
    'toString',
    '__proto__',
    'hasOwnProperty',
  ])('POST /components/keyvault/%s is no action: 404', async (name) => {
    expect(await post(`/components/keyvault/${name}`)).toEqual({
      status: 404,
      body: { error: `no action ${name}` },
    });
  });

  it("an action's input that its schema refuses: 400, each problem named in readable lines", async () => {
    expect(await post('/components/keyvault/setAccessPolicy', '{"identity": "functionApp"}')).toEqual({
      status: 400,
      body: { error: '✖ Invalid input: expected array, received undefined\n  → at secrets' },
    });
    expect(await post('/components/keyvault/setAccessPolicy', '[]')).toEqual({
      status: 400,
      body: { error: '✖ Invalid input: expected object, received array' },
    });
  });

  it.each([
    '[]',
    '[5]',
    'null',
    '5',
  ])('POST /clock/advance with %s is refused: 400, the clock unmoved', async (body) => {
    const before = stack.clock.offsetMs;
    expect(await post('/clock/advance', body)).toEqual({
      status: 400,
      body: { error: 'send a JSON object such as {"minutes": 5}' },
    });
    expect(stack.clock.offsetMs).toBe(before);
  });

  it.each([
    ['PUT', '/clock/advance', 'POST'],
    ['GET', '/components/keyvault/setAccessPolicy', 'POST'],
    ['DELETE', '/stack', 'GET'],
    ['POST', '/health', 'GET'],
  ])('%s %s, an operation by another method: 405 naming it, with Allow', async (method, path, allowed) => {
    const response = await fetch(`${stack.description.controlUrl}${path}`, {
      method,
      headers: { [CONTROL_KEY_HEADER]: stack.description.masterKey },
    });
    expect({
      status: response.status,
      allow: response.headers.get('allow'),
      body: await response.json(),
    }).toEqual({
      status: 405,
      allow: allowed,
      body: { error: `${path} takes ${allowed}, not ${method}` },
    });
  });
});
