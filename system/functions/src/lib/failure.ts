/** What a failed invocation logs: the message only (no secret travels in messages we build), never the response. */
import type { InvocationContext } from '@azure/functions';

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

export function logFailure(context: InvocationContext, what: string, error: unknown): void {
  context.error(`${context.functionName}: ${what} failed: ${messageOf(error)}`);
}
