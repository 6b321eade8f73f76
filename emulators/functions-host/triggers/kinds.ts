/** Every trigger kind this host runs besides HTTP, by lower-cased binding type. */
import type { TriggerKind } from '../host.ts';
import { blobTrigger } from './blob.ts';
import { timerTrigger } from './timer.ts';

export function triggerKinds(): Map<string, TriggerKind> {
  const kinds = [timerTrigger, blobTrigger];
  return new Map(kinds.map((kind) => [kind.type.toLowerCase(), kind]));
}
