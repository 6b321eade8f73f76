/**
 * node:util's parseArgs refusal (an unknown option, a missing or ambiguous value) in one line: its first
 * sentence names the option; what follows is advice about `--`, which no command here takes.
 */
export const argsRefusal = (error: unknown): string => (error as Error).message.split(/\.\s/)[0] ?? '';
