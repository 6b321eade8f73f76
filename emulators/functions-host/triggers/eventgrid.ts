/**
 * eventGridTrigger: deliveries arrive at `/runtime/webhooks/eventgrid?functionName=<name>` with the
 * `eventgrid_extension` system key (or the master key) in `code` / `x-functions-key`, as the Event Grid
 * extension receives them: `aeg-event-type: SubscriptionValidation` is answered with the validation code,
 * `Notification` runs the function once per event (Event Grid schema arrays or CloudEvents, single or
 * batched) and answers 202, or 500 if any run failed, so the sender retries.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson } from '../../core/http.ts';
import type { RegisteredFunction, RpcTypedData } from '../core-api.ts';
import { type Host, isDisabled, type TriggerBinding, type TriggerKind, triggerOf } from '../host.ts';
import { presentedKey } from '../http/functions.ts';
import type { TriggerInput } from '../invoke.ts';

const SYSTEM_KEY = 'eventgrid_extension';
type Event = Record<string, unknown>;

/**
 * The event as the function's input; as trigger metadata and for binding expressions only its `data`
 * (`{data.url}`), the one name the extension's binding data contract has.
 */
function eventInput(host: Host, trigger: TriggerBinding, event: Event, reason?: string): TriggerInput {
  const { data } = event;
  const metadata: Record<string, RpcTypedData> =
    data === undefined
      ? {}
      : { data: typeof data === 'string' ? { string: data } : { json: JSON.stringify(data) } };
  return {
    inputData: [{ name: trigger.name, data: { json: JSON.stringify(event) } }],
    triggerMetadata: metadata,
    reason: reason ?? `EventGrid trigger fired at ${host.clock.date().toISOString()}`,
    bindingData: { data },
  };
}

const isEvent = (value: unknown): value is Event =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The events of a body: an array (Event Grid schema, CloudEvents batch) or one object (CloudEvent). */
function parseEvents(body: Buffer): Event[] | undefined {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    const events = Array.isArray(parsed) ? parsed : [parsed];
    return events.every(isEvent) ? events : undefined;
  } catch {
    return undefined;
  }
}

/** `data.validationCode`; CloudEvents may carry `data` as JSON text. */
function validationCode(event: Event | undefined): string | undefined {
  let data = event?.data;
  if (typeof data === 'string') {
    try {
      data = JSON.parse(data);
    } catch {
      return undefined;
    }
  }
  const code = isEvent(data) ? data.validationCode : undefined;
  return typeof code === 'string' ? code : undefined;
}

async function serve(host: Host, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  if (!(await host.keys.authorizeSystem(SYSTEM_KEY, presentedKey(req, url.searchParams)))) {
    res.writeHead(401, { 'content-length': 0 }).end();
    return;
  }
  // CloudEvents webhook validation (abuse protection): allow the asking origin.
  const origin = req.headers['webhook-request-origin'];
  if (req.method === 'OPTIONS' && typeof origin === 'string') {
    res
      .writeHead(200, { 'webhook-allowed-origin': origin, 'webhook-allowed-rate': '*', 'content-length': 0 })
      .end();
    return;
  }
  const name = url.searchParams.get('functionName') ?? '';
  const fn = host.registry.find(name);
  if (
    req.method !== 'POST' ||
    !fn ||
    // The extension looks its listeners up by exact name (a Dictionary with the default comparer).
    fn.name !== name ||
    triggerOf(fn).type.toLowerCase() !== 'eventgridtrigger' ||
    isDisabled(host.settings, fn)
  ) {
    res
      .writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
      .end(`cannot find function: '${name}'`);
    return;
  }
  const kind = String(req.headers['aeg-event-type'] ?? '').toLowerCase();
  const events = parseEvents(await readBody(req, host.config.requestBodyLimit));
  if (kind === 'unsubscribe') {
    res.writeHead(202, { 'content-length': 0 }).end();
    return;
  }
  if (!events || (kind !== 'subscriptionvalidation' && kind !== 'notification')) {
    res.writeHead(400, { 'content-length': 0 }).end();
    return;
  }
  if (kind === 'subscriptionvalidation') {
    const code = validationCode(events[0]);
    if (code === undefined) res.writeHead(400, { 'content-length': 0 }).end();
    else sendJson(res, 200, { validationResponse: code });
    return;
  }
  await deliver(host, fn, events, res);
}

async function deliver(host: Host, fn: RegisteredFunction, events: Event[], res: ServerResponse) {
  const trigger = triggerOf(fn);
  const outcomes = await Promise.all(
    events.map((event) => host.invoker.invoke(fn, eventInput(host, trigger, event))),
  );
  if (outcomes.every((outcome) => outcome.succeeded)) {
    res.writeHead(202, { 'content-length': 0 }).end();
    return;
  }
  res
    .writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
    .end(`Exception while executing function: Functions.${fn.name}`);
}

export const eventGridTrigger: TriggerKind = {
  type: 'eventGridTrigger',
  async listen(host) {
    // The extension asks for its system key when it starts; a host.json from before may lack it.
    await host.keys.ensureSystemKey(SYSTEM_KEY);
    return { stop: async () => {} };
  },
  async adminInput(host, _fn, trigger, input) {
    const [event] = parseEvents(Buffer.from(input)) ?? [];
    if (!event) throw new Error('the input of an Event Grid function is one event as JSON');
    return eventInput(host, trigger, event, 'This function was programmatically called via the host APIs.');
  },
  webhook: { name: 'eventgrid', serve },
};
