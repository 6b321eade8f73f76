/**
 * Vitest's setup for every test file: each worker draws free ports from a range of its own
 * (TASKSTACK_FREE_PORTS), and so do the stacks and components it starts, which inherit the setting.
 * A launcher lets each component's port go just before the component listens on it; a stack of another
 * worker drawing that port meanwhile failed a start ("blob failed to start: port … is already in use").
 * The launcher now starts again on ports drawn anew (stack/launcher.ts); own ranges make that rare.
 */
import { FREE_PORTS_ENV } from './http.ts';

/** Ports per worker, from 20000 up: three workers stay below Linux's ephemeral range (32768). */
const SLICE = 4_000;
const SLICES = 3;
const worker = Number(process.env.VITEST_POOL_ID ?? 1);
const low = 20_000 + ((worker - 1) % SLICES) * SLICE;
process.env[FREE_PORTS_ENV] ??= `${low}-${low + SLICE - 1}`;
