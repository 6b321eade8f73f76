/** Every trigger kind this host runs besides HTTP, by lower-cased binding type. */
import type { TriggerKind } from '../host.ts';
import { blobTrigger } from './blob.ts';
import { cosmosDBTrigger } from './cosmos.ts';
import { eventGridTrigger } from './eventgrid.ts';
import { eventHubTrigger } from './eventhub.ts';
import { timerTrigger } from './timer.ts';

export function triggerKinds(): Map<string, TriggerKind> {
  const kinds = [timerTrigger, blobTrigger, eventGridTrigger, eventHubTrigger, cosmosDBTrigger];
  return new Map(kinds.map((kind) => [kind.type.toLowerCase(), kind]));
}
