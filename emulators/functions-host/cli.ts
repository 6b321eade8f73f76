/**
 * `taskstack functions keys …`, shaped after `az functionapp function keys` and `az functionapp keys`:
 *   keys list  [--function <name>]
 *   keys set   [--function <name> | --key-type functionKeys|systemKeys|masterKey] --key-name <name> [--key-value <value>]
 *   keys renew [--function <name> | --key-type …] --key-name <name>
 * Talks to the running stack's control API; prints JSON as az does.
 */
import { parseArgs } from 'node:util';
import { argsRefusal } from '../core/args.ts';
import { callControl } from '../stack/control.ts';

const USAGE =
  'usage: functions keys list [--function <name>]\n' +
  '       functions keys set [--function <name> | --key-type functionKeys|systemKeys|masterKey] --key-name <name> [--key-value <value>]\n' +
  '       functions keys renew [--function <name> | --key-type …] --key-name <name>';

/**
 * Runs the command; `connect` finds the stack's control API from `--data-dir` (undefined when not
 * given), once the words are known to be right.
 */
export async function keysCommand(
  argv: string[],
  connect: (dataDir: string | undefined) => { url: string; key: string },
): Promise<string> {
  const args = [...argv];
  if (args[0] === 'functions') args.shift();
  if (args[0] === 'keys') args.shift();
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (error) {
    throw new Error(`${argsRefusal(error)}\n${USAGE}`);
  }
  const { verb, values } = parsed;
  const fn = values.function ?? values['function-name'];
  const target = { function: fn, keyType: values['key-type'], keyName: values['key-name'] };
  let action: string;
  let input: Record<string, unknown>;
  if (verb === 'list') {
    action = 'listKeys';
    input = { function: fn };
  } else if (verb === 'set' || verb === 'renew') {
    if (!target.keyName) throw new Error(`--key-name is required\n${USAGE}`);
    action = verb === 'set' ? 'setKey' : 'renewKey';
    input = verb === 'set' ? { ...target, keyValue: values['key-value'] } : target;
  } else {
    throw new Error(USAGE);
  }
  const control = connect(values['data-dir']);
  const response = await callControl(`${control.url.replace(/\/+$/, '')}/components/functions/${action}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-taskstack-key': control.key },
    body: JSON.stringify(input),
  }).catch((error: Error) => {
    throw new Error(`functions keys ${verb}: ${error.message}`);
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(
      `functions keys ${verb}: the control API answered ${response.status} ${text.slice(0, 200)}`,
    );
  }
  if (!response.ok) throw new Error(`functions keys ${verb}: ${(body as { error?: string }).error ?? text}`);
  return JSON.stringify(body, null, 2);
}

function parse(args: string[]) {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      function: { type: 'string' },
      'function-name': { type: 'string' },
      'key-type': { type: 'string' },
      'key-name': { type: 'string' },
      'key-value': { type: 'string' },
      'data-dir': { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new Error('expected one of list, set, renew');
  return { verb: positionals[0], values };
}
