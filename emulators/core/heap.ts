/**
 * V8 heap flags of the processes that are busy under load (the functions host, Azurite, Event Grid,
 * Cosmos DB, the web apps, the gateway). Left to its defaults, V8 grows a busy process's young
 * generation to 2 × 16 MB and lets its old generation fill with up to four times its live data in
 * garbage before a full GC (it sizes the growing factor for this machine's memory): 10,000 createtask +
 * managetask requests took the stack from ~400 to ~850 MB PSS, little of it live. Figures: README,
 * "Memory under load".
 *
 * No heap limit: a component may still take whatever a legal request needs (a 100 MB body).
 */
const GROWING = '--heap-growing-percent=30'; // full GC once the old generation is 1.3 × its live data

const HEAP_FLAGS: Record<string, string[]> = {
  // Much allocation per request: 4 MB semi-spaces measured no CPU cost against the default 16 MB.
  functions: ['--max-semi-space-size=4', GROWING],
  azurite: ['--max-semi-space-size=4', GROWING],
  // One delivery or query per request: little allocation, 1 MB semi-spaces are enough.
  eventgrid: ['--max-semi-space-size=1', GROWING],
  cosmos: ['--max-semi-space-size=1', GROWING],
  // Web app A after ~12,000 requests: RSS ~147 → ~91 MB, for ~4–6 % of its request rate (medians of
  // alternating runs, 9 with the flags and 12 without: GET 5,312 / 5,526 per s, POST 4,908 / 5,204).
  // Either flag alone saves less (semi-spaces ~127 MB, growing ~117 MB); 8 MB semi-spaces ~100 MB.
  appservice: ['--max-semi-space-size=4', GROWING],
  // The gateway after its bench: RSS ~95 → ~82 MB. Its scavenges on the main thread alone: on two busy
  // cores a parallel scavenge waits for V8's helper threads, and 8 MB semi-spaces with them doubled its
  // GC pauses (README, "Benchmark" in gateway-sim). The growing percent raised its RSS (104–107 MB).
  gateway: ['--max-semi-space-size=8', '--no-parallel-scavenge'],
};

/**
 * The flags `process` (an emulator's name, or `azurite`) runs with. Its V8 code cache is only valid for
 * these flags (run-cached.cjs), so whatever forks it uses this.
 */
export const heapFlags = (process: string): string[] => HEAP_FLAGS[process] ?? [];

/**
 * The environment every component's process (and Azurite, which inherits it) gets besides the stack's.
 * A value the user set wins.
 * - MALLOC_ARENA_MAX: glibc gives each thread that allocates its own malloc arena, up to eight per
 *   core, and each keeps what it once held. Two arenas: 10,000 createtask + managetask requests ended
 *   ~20 MB lower (two alternating pairs: 453 / 439 → 432 / 418 MB PSS) at the same rate.
 * - MALLOC_TRIM_THRESHOLD_: glibc gives freed memory at the top of an arena back to the system once
 *   more than this is free there, but raises the threshold to twice the largest block it has freed
 *   that was big enough to be mapped on its own; a process frees such blocks as it starts, and each
 *   kept several MB it no longer used (its `[heap]` was the largest region of several processes).
 *   Fixing it at glibc's own default, 128 KB, also fixes the size above which a block is mapped on its
 *   own at its default, 128 KB. Settled, the stack went 251–257 → 224–237 MB PSS (eight runs), and
 *   413–426 → 370–424 MB (median ~379) after 10,000 requests, at the same rates (README, "Memory under
 *   load").
 */
export const MALLOC_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_TRIM_THRESHOLD_: '131072' };

/** `env` with MALLOC_ENV beneath it, for whatever starts a component's process (a value `env` sets wins). */
export const withMallocEnv = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({ ...MALLOC_ENV, ...env });
