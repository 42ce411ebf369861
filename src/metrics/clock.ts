/**
 * The request clock: monotonic microseconds modulo 2^30 ("ticks"). A tick count is a small
 * integer, which V8 holds without a heap object; a performance.now() reading is a double, a fresh
 * 16-byte heap number each call and again each time it is stored in an object or passed on (the
 * 4 KiB PUT read the clock some six times per store: ~100 bytes of garbage). The addon reads
 * CLOCK_MONOTONIC (native/src/binding_clock.c, ~28 ns here against ~45 for performance.now());
 * without it, performance.now() stands in. Spans up to 2^30 us (17.8 minutes) subtract right.
 */
import { optionalAddon } from '../util/addon.js';

/** A reading of the clock (ticks()): only the recorder and ticks' own functions do arithmetic on it. */
export type Ticks = number & { readonly __ticks: unique symbol };

export const TICKS_MASK = 2 ** 30 - 1;
const MASK = TICKS_MASK;

interface ClockAddon {
  clockTicks(): number;
}

const addon = optionalAddon<ClockAddon>('clockTicks');

/** Now, in ticks. */
export const ticks: () => Ticks =
  addon !== null ? (addon.clockTicks as () => Ticks) : () => (Math.floor(performance.now() * 1000) & MASK) as Ticks;

/** Microseconds from `start` to `end` (both ticks). */
export const microsBetween = (start: Ticks, end: Ticks): number => (end - start) & MASK;

/** The ticks `ms` milliseconds before now (a span measured elsewhere, as the start of a stage that ends now). */
export const ticksAgo = (ms: number, now: Ticks = ticks()): Ticks => ((now - Math.round(ms * 1000)) & MASK) as Ticks;
