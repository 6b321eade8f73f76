/**
 * The two request/response nodes: `$cbs` (put-token: claims-based security) and `$management` (READ of
 * hub and partition runtime information). Replies carry `status-code`/`status-description` (and
 * `error-condition` on failure) and are correlated to the request's `message_id`.
 */
import rhea, { type Message } from 'rhea';
import { argumentError, entityNotFound, Fault, unauthorized } from '../service/faults.ts';
import type { EventHub } from '../service/namespace.ts';
import { entityPath, verifySasToken } from '../service/sas.ts';
import { amqpError, type ConnectionState, requireClaim, type Service } from './link.ts';

const { types } = rhea;
const SAS_TOKEN_TYPE = 'servicebus.windows.net:sastoken';
/** What the SDKs send as the type of an Entra ID token. */
const JWT_TOKEN_TYPE = 'jwt';
const STR8 = 0xa1;

function reply(request: Message, status: number, description: string, body?: unknown): Message {
  return {
    correlation_id: request.message_id,
    to: request.reply_to,
    application_properties: { 'status-code': types.wrap_int(status), 'status-description': description },
    body,
  };
}

function failure(request: Message, error: unknown, service: Service, entity: string): Message {
  const { condition, description } = amqpError(error, service, entity);
  const response = reply(request, error instanceof Fault ? error.status : 500, description ?? '');
  return {
    ...response,
    application_properties: { ...response.application_properties, 'error-condition': condition },
  };
}

/** put-token: verifies the SAS or Entra ID token and records what it grants on this connection. */
export async function putToken(request: Message, state: ConnectionState, service: Service): Promise<Message> {
  const props = request.application_properties ?? {};
  const audience = String(props.name ?? '');
  const [hubName] = entityPath(audience).split('/');
  try {
    if (props.operation !== 'put-token')
      throw argumentError(`The operation '${props.operation}' is not supported.`);
    if (props.type !== SAS_TOKEN_TYPE && props.type !== JWT_TOKEN_TYPE) {
      throw unauthorized(
        `InvalidTokenType: only '${SAS_TOKEN_TYPE}' and '${JWT_TOKEN_TYPE}' tokens are accepted; received '${props.type}'.`,
      );
    }
    const claim =
      props.type === JWT_TOKEN_TYPE
        ? await service.verifyJwt(request.body, audience)
        : verifySasToken(request.body, audience, service.rule, service.clock);
    if (hubName && !service.namespace.hub(hubName)) throw entityNotFound(`${service.endpoint}/${hubName}`);
    // A renewed token replaces the one for the same resource, so the list stays small.
    state.claims = [...state.claims.filter((c) => c.path !== claim.path), claim];
    return reply(request, 202, 'Accepted');
  } catch (error) {
    return failure(request, error, service, hubName || '$cbs');
  }
}

function hubInfo(hub: EventHub) {
  return {
    name: hub.name,
    type: 'com.microsoft:eventhub',
    created_at: types.wrap_timestamp(hub.createdAt),
    partition_count: types.wrap_int(hub.partitions.length),
    partition_ids: types.wrap_array(
      hub.partitions.map((p) => p.id),
      STR8,
      undefined,
    ),
  };
}

function partitionInfo(hub: EventHub, partitionId: unknown) {
  const partition = hub.partition(String(partitionId));
  const p = partition.properties();
  return {
    name: hub.name,
    type: 'com.microsoft:partition',
    partition: partition.id,
    begin_sequence_number: types.wrap_long(p.beginningSequenceNumber),
    last_enqueued_sequence_number: types.wrap_long(p.lastEnqueuedSequenceNumber),
    last_enqueued_offset: p.lastEnqueuedOffset,
    last_enqueued_time_utc: types.wrap_timestamp(p.lastEnqueuedTime),
    is_partition_empty: p.isEmpty,
  };
}

/** READ of `com.microsoft:eventhub` or `com.microsoft:partition`. */
export async function management(
  request: Message,
  state: ConnectionState,
  service: Service,
): Promise<Message> {
  const props = request.application_properties ?? {};
  const name = String(props.name ?? '');
  try {
    if (props.operation !== 'READ') {
      throw new Fault('amqp:not-implemented', `The operation '${props.operation}' is not supported.`, 501);
    }
    const hub = service.namespace.hub(name);
    if (!hub) throw entityNotFound(`${service.endpoint}/${name}`);
    // A token may come with the request itself (a SAS or, from Entra ID clients, a JWT); otherwise
    // the connection's put-token must cover the hub. Runtime information is readable with any right.
    const token = props.security_token;
    const claims =
      token === undefined
        ? state.claims
        : [
            typeof token === 'string' && token.startsWith('SharedAccessSignature ')
              ? verifySasToken(token, `${service.endpoint}/${name}`, service.rule, service.clock)
              : await service.verifyJwt(token, `${service.endpoint}/${name}`),
          ];
    requireClaim({ ...state, claims }, service, `${hub.name}/$management`, 'Listen', [
      'Manage',
      'Listen',
      'Send',
    ]);
    if (props.type === 'com.microsoft:eventhub') return reply(request, 200, 'OK', hubInfo(hub));
    if (props.type === 'com.microsoft:partition')
      return reply(request, 200, 'OK', partitionInfo(hub, props.partition));
    throw argumentError(`The entity type '${props.type}' is not supported.`);
  } catch (error) {
    return failure(request, error, service, name || '$management');
  }
}
