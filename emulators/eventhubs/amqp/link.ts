import { randomUUID } from 'node:crypto';
import type { AmqpError, EventContext, link as Link, Sender } from 'rhea';
import type { StackClock } from '../../core/clock.ts';
import type { EntraVerifier } from '../service/entra.ts';
import { Fault, missingClaim } from '../service/faults.ts';
import type { EventHubsNamespace } from '../service/namespace.ts';
import { type Claim, covers, entityPath, isLive, type Right, type SasRule } from '../service/sas.ts';

/** What the protocol handlers share: the service, the key rule, the token checks, the clock and limits. */
export interface Service {
  namespace: EventHubsNamespace;
  rule: SasRule;
  /** Checks an Entra ID token (put-token type `jwt`) and gives the claim its roles grant. */
  verifyJwt: EntraVerifier;
  clock: StackClock;
  log(message: string): void;
  maxMessageSize: number;
  /** `sb://127.0.0.1:P` — how resources are named in error texts and token audiences. */
  endpoint: string;
}

/** Per connection: the claims its put-tokens established, the links replies go out on, its links. */
export interface ConnectionState {
  claims: Claim[];
  replyLinks: Map<string, Sender>;
  links: Map<Link, LinkHandler>;
}

/** What a link does with the events the router forwards to it. */
export interface LinkHandler {
  message?(context: EventContext): void;
  sendable?(): void;
  closed?(): void;
}

/** An AMQP error with Event Hubs' tracking suffix (a fresh id, the entity, the stack time). */
export function amqpError(error: unknown, service: Service, entity: string): AmqpError {
  const fault =
    error instanceof Fault
      ? error
      : new Fault('amqp:internal-error', 'The service was unable to process the request.', 500);
  if (!(error instanceof Fault)) service.log(`internal error on ${entity}: ${(error as Error)?.message}`);
  const timestamp = service.clock.date().toISOString().slice(0, 19);
  const tracker = `${new URL(service.endpoint).host}:eventhub:${entity}`;
  return {
    condition: fault.condition,
    description: `${fault.description} TrackingId:${randomUUID()}_G0, SystemTracker:${tracker}, Timestamp:${timestamp}`,
  };
}

/**
 * Throws unless a live claim of this connection covers `address` with the right `claim` (or, when
 * given, any of `accepted`: runtime information is readable with any right).
 */
export function requireClaim(
  state: ConnectionState,
  service: Service,
  address: string,
  claim: Right,
  accepted: readonly Right[] = [claim],
): void {
  const resource = `${service.endpoint}/${address}`;
  const path = entityPath(resource);
  const grants = (c: Claim) =>
    isLive(c, service.clock) && covers(c.path, path) && c.rights.some((right) => accepted.includes(right));
  if (!state.claims.some(grants)) throw missingClaim(claim, resource);
}

/** The attach frame this end will answer with (rhea keeps it as `local.attach`, absent from its typings). */
export function localAttach(link: Link): Record<string, unknown> {
  return (link as unknown as { local: { attach: Record<string, unknown> } }).local.attach;
}
