import { z } from 'zod';
import { defaultDataDir, resolveDataDir } from './data-dir.ts';

const port = z.number().int().min(1).max(65535);

/** Options of `start()` and of `taskstack start` (the CLI maps flags and environment onto these). */
export const stackOptionsSchema = z.object({
  /** Where keys, the CA, persisted data, logs and stack.json live (data-dir.ts). */
  dataDir: z.string().default(defaultDataDir),
  /** `default` (conventional ports), `free` (any free ports: tests), or `{ base }` (base + position). */
  ports: z.union([z.enum(['default', 'free']), z.object({ base: port })]).default('default'),
  /** Fixed ports for single components, e.g. `{ blob: 20000 }`. */
  portOverrides: z.record(z.string(), port).default({}),
  /** The apps manifest to run (default system/apps.json): apps are data, not launcher code. */
  appsFile: z.string().optional(),
  /** Keep every store in memory: nothing of the services' data is persisted. */
  inMemory: z.boolean().default(false),
  /** The EncryptionKey secret's text; random per data directory when not given. */
  encryptionKey: z.string().min(1).optional(),
  /** App settings to add or replace, per app (e.g. `{ functions: { DocumentDbConnection__accountEndpoint: '…' } }`). */
  settings: z.record(z.string(), z.record(z.string(), z.string())).default({}),
  /** Which components to run (default: all of them); for tools and tests that need only a few. */
  components: z.array(z.string()).optional(),
  /**
   * Rebuild an app and restart its components when a file of its folder changes (watch.ts). `taskstack
   * start` watches unless --no-watch; tests and tools get a stack whose apps stay as they started.
   */
  watch: z.boolean().default(false),
  /** Where progress and component logs go; `false` for silence (tests). */
  console: z.boolean().default(true),
});

export type StackOptionsInput = z.input<typeof stackOptionsSchema>;
export type StackOptions = z.output<typeof stackOptionsSchema>;

/** The options with their defaults; throws naming each wrong one (zod's own error is a JSON dump). */
export function parseStackOptions(input: StackOptionsInput = {}): StackOptions {
  const parsed = stackOptionsSchema.safeParse(input);
  if (!parsed.success) throw new Error(`invalid stack options: ${z.prettifyError(parsed.error)}`);
  return { ...parsed.data, dataDir: resolveDataDir(parsed.data.dataDir) };
}
