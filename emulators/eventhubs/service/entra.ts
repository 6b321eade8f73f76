/**
 * Entra ID tokens on `$cbs` (put-token type `jwt`): a token from the stack's identity provider for
 * Event Hubs, whose principal gets the rights its role assignments in the topology give — none without
 * one, so its links are refused with the missing claim, as Azure RBAC does.
 */
import type { z } from 'zod';
import type { SharedSecrets } from '../../core/secrets.ts';
import type { eventHubsRoles, Topology } from '../../core/topology.ts';
import { createTokenVerifier, TokenError } from '../../identity/verify.ts';
import { unauthorized } from './faults.ts';
import { type Claim, entityPath, invalidSignature, malformed, type Right } from './sas.ts';

/** The built-in data roles of Event Hubs and the SAS rights they amount to. */
const ROLE_RIGHTS: Record<z.infer<typeof eventHubsRoles>, readonly Right[]> = {
  'Azure Event Hubs Data Owner': ['Manage', 'Send', 'Listen'],
  'Azure Event Hubs Data Sender': ['Send'],
  'Azure Event Hubs Data Receiver': ['Listen'],
};
/** What Event Hubs accepts as a token audience (the SDK asks for `https://eventhubs.azure.net//.default`). */
const AUDIENCES = [
  'https://eventhubs.azure.net',
  'https://eventhubs.azure.net/',
  'https://servicebus.azure.net',
  'https://servicebus.azure.net/',
];

export type EntraVerifier = (token: unknown, audience: string) => Promise<Claim>;

export function entraVerifier(
  provider: { issuer: string; jwksUri: string } | undefined,
  topology: Topology,
  secrets: SharedSecrets,
): EntraVerifier {
  if (!provider) {
    return async () => {
      throw unauthorized('InvalidIssuer: Token issuer is invalid.');
    };
  }
  const verifier = createTokenVerifier(provider);
  const rightsOf = (principalId: string): Right[] => [
    ...new Set(
      topology.eventHubs.roleAssignments
        .filter((assignment) => secrets.identities[assignment.identity]?.principalId === principalId)
        .flatMap((assignment) => ROLE_RIGHTS[assignment.role]),
    ),
  ];
  return async (token, audience) => {
    if (typeof token !== 'string') throw malformed();
    try {
      const caller = await verifier.verify(token, AUDIENCES);
      return {
        path: entityPath(audience),
        rights: rightsOf(caller.principalId),
        signedExpiry: caller.expiresOn,
      };
    } catch (error) {
      throw error instanceof TokenError ? refusal(error) : error;
    }
  };
}

/** Service Bus's texts for a refused token; an unreachable provider is the service's own failure. */
function refusal(error: TokenError): Error {
  switch (error.reason) {
    case 'signature':
      return invalidSignature();
    case 'expired':
      return unauthorized('ExpiredToken: The token is expired.');
    case 'issuer':
      return unauthorized('InvalidIssuer: Token issuer is invalid.');
    case 'audience':
      return unauthorized(`InvalidAudience: The token audience '${error.found}' is not valid.`);
    case 'unavailable':
      return error;
    default:
      return malformed();
  }
}
