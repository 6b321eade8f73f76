/**
 * Microsoft Entra publishers (`Authorization: Bearer <jwt>`, what `EventGridPublisherClient` sends with a
 * TokenCredential, scope `https://eventgrid.azure.net/.default`): a token of the stack's identity
 * provider for Event Grid, whose principal holds EventGrid Data Sender on the topic in the topology.
 */
import type { SharedSecrets } from '../core/secrets.ts';
import type { EventGridTopic } from '../core/topology.ts';
import { createTokenVerifier, TokenError } from '../identity/verify.ts';
import { noSignature } from './auth.ts';
import { EventGridError } from './errors.ts';

/** What Event Grid takes as a token audience (the SDK asks for `https://eventgrid.azure.net/.default`). */
const AUDIENCES = ['https://eventgrid.azure.net', 'https://eventgrid.azure.net/'];

/** Throws the EventGridError Azure answers when the token may not publish to the topic. */
export type EntraCheck = (authorization: string, topic: { name: string; armId: string }) => Promise<void>;

export function entraPublishers(
  provider: { issuer: string; jwksUri: string } | undefined,
  topics: EventGridTopic[],
  secrets: SharedSecrets,
): EntraCheck {
  const verifier = provider && createTokenVerifier(provider);
  const senders = new Map(
    topics.map((topic) => [
      topic.name,
      new Set(
        topic.roleAssignments.map((assignment) => secrets.identities[assignment.identity]?.principalId),
      ),
    ]),
  );
  return async (authorization, topic) => {
    // A token that cannot be verified (no provider here, or not one of its tokens for Event Grid) gets
    // the 401 of a request without a key: Azure's own text for it is not known here.
    if (!verifier) throw noSignature();
    let principalId: string;
    try {
      ({ principalId } = await verifier.verify(authorization, AUDIENCES));
    } catch (error) {
      // The identity provider out of reach is the service's own failure (a 500), not the caller's.
      if (error instanceof TokenError && error.reason !== 'unavailable') throw noSignature();
      throw error;
    }
    if (senders.get(topic.name)?.has(principalId)) return;
    // Azure's text and status (Azure/azure-sdk-for-net#22831: a principal without EventGrid Data Sender).
    throw new EventGridError(
      401,
      'Unauthorized',
      `The principal associated with access token presented with the incoming request does not have permission to send data to ${topic.armId}.`,
    );
  };
}
