/**
 * The one loop of the background workers (src/util/background-loop.ts): kicks coalesce, passes
 * never overlap, a failed pass backs off, nothing runs after stop, and stop waits for the pass
 * under way. Fake timers: every wait is the loop's own, advanced by the test.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BackgroundLoop, type BackgroundLoopOptions } from '../src/util/background-loop.js';

/** A step whose passes the test ends one by one; it counts them and the most that ran at once. */
class Steps {
  started = 0;
  ended = 0;
  running = 0;
  mostAtOnce = 0;
  errors: Error[] = [];
  /** Passes that throw instead of ending (how many still to fail). */
  failing = 0;
  /** Passes end on their own (no finish() needed). */
  auto = false;
  private finishers: (() => void)[] = [];

  readonly step = async (): Promise<void> => {
    this.started++;
    this.running++;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    try {
      if (!this.auto) await new Promise<void>((resolve) => this.finishers.push(resolve));
      if (this.failing > 0) {
        this.failing--;
        throw new Error('the disk is gone');
      }
    } finally {
      this.running--;
      this.ended++;
    }
  };

  /** Ends the oldest pass under way. */
  finish(): void {
    const next = this.finishers.shift();
    if (!next) throw new Error('no pass is running');
    next();
  }

  loop(options: Partial<BackgroundLoopOptions> = {}): BackgroundLoop {
    return new BackgroundLoop({ step: this.step, onError: (err) => this.errors.push(err), ...options });
  }
}

/** Runs what is due now: microtasks, immediates, timers at the current time. */
const settle = (): Promise<void> => vi.advanceTimersByTimeAsync(0).then(() => undefined);

/** A loop started and kicked, its first pass under way. */
async function kicked(options: Partial<BackgroundLoopOptions> = {}, steps = new Steps()): Promise<{ steps: Steps; loop: BackgroundLoop }> {
  const loop = steps.loop(options);
  loop.start();
  loop.kick();
  await settle();
  return { steps, loop };
}

/** A loop whose passes end on their own, the first `failing` of them by a throw: after its first pass. */
async function afterFailedPass(failing: number): Promise<{ steps: Steps; loop: BackgroundLoop }> {
  const steps = new Steps();
  steps.auto = true;
  steps.failing = failing;
  const loop = steps.loop();
  loop.kick();
  await settle();
  return { steps, loop };
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('kick', () => {
  it('starts a pass when idle; kicks during a pass make exactly one more pass after it', async () => {
    const { steps, loop } = await kicked();
    expect(steps.started).toBe(1);
    loop.kick();
    loop.kick();
    loop.kick();
    await settle();
    expect(steps.started).toBe(1);
    steps.finish();
    await settle();
    expect(steps.started).toBe(2);
    steps.finish();
    await settle();
    expect([steps.started, steps.ended, loop.busy]).toStrictEqual([2, 2, false]);
  });

  it('never runs two passes at once, whatever comes when', async () => {
    const steps = new Steps();
    const loop = steps.loop({ everyMs: 7 });
    loop.start();
    for (let i = 0; i < 50; i++) {
      loop.kick();
      if (i % 3 === 0 && steps.running > 0) steps.finish();
      await vi.advanceTimersByTimeAsync(i % 5);
    }
    steps.auto = true;
    while (steps.running > 0) {
      steps.finish();
      await settle();
    }
    expect(steps.started).toBeGreaterThan(10);
    expect(steps.mostAtOnce).toBe(1);
    await loop.stop();
  });

  it('a pass that kicks from its synchronous start asks for one more instead of starting a second beside it', async () => {
    let loop: BackgroundLoop | undefined;
    let passes = 0;
    let atOnce = 0;
    let most = 0;
    loop = new BackgroundLoop({
      step: async () => {
        passes++;
        atOnce++;
        most = Math.max(most, atOnce);
        if (passes === 1) loop!.kick();
        await Promise.resolve();
        atOnce--;
      },
      onError: (err) => {
        throw err;
      },
    });
    loop.kick();
    await settle();
    expect([passes, most]).toStrictEqual([2, 1]);
  });
});

describe('back-off', () => {
  it('after a pass throws, the error is reported and the next pass waits (1 s, then 2 s); a good pass clears it', async () => {
    // The middle of the jitter (±20 %): waits of exactly 1 s and 2 s.
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const { steps, loop } = await afterFailedPass(2);
    expect(steps.errors.map((e) => e.message)).toStrictEqual(['the disk is gone']);
    loop.kick();
    await vi.advanceTimersByTimeAsync(999);
    expect([steps.started, loop.busy]).toStrictEqual([1, true]);
    await vi.advanceTimersByTimeAsync(1);
    expect([steps.started, steps.errors.length]).toStrictEqual([2, 2]);
    loop.kick();
    await vi.advanceTimersByTimeAsync(1999);
    expect(steps.started).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect([steps.started, steps.errors.length]).toStrictEqual([3, 2]);
    // That pass succeeded: the next starts at once.
    loop.kick();
    await settle();
    expect(steps.started).toBe(4);
  });

  it('a ticking loop backs off no longer than its tick, however often passes fail', async () => {
    const steps = new Steps();
    steps.auto = true;
    steps.failing = 7;
    // Half a minute at most (the 7th wait would be 64 s uncapped).
    const loop = steps.loop({ everyMs: 60_000 });
    for (let i = 0; i < 7; i++) {
      loop.kick();
      await vi.advanceTimersByTimeAsync(30_000 * 1.2);
    }
    expect([steps.started, steps.errors.length]).toStrictEqual([7, 7]);
    // A tick of 300 ms: 300 ms at most, from the first failure on.
    const short = steps.loop({ everyMs: 300 });
    steps.failing = 1;
    short.kick();
    await settle();
    short.kick();
    await vi.advanceTimersByTimeAsync(300 * 1.2);
    expect(steps.started).toBe(9);
  });

  it('kicks while a pass waits to start are taken by that pass', async () => {
    const steps = new Steps();
    steps.auto = true;
    let delay = 100;
    const loop = steps.loop({ delayMs: () => delay });
    loop.kick();
    loop.kick();
    await vi.advanceTimersByTimeAsync(50);
    loop.kick();
    expect(steps.started).toBe(0);
    delay = 0;
    await vi.advanceTimersByTimeAsync(50);
    await settle();
    expect(steps.started).toBe(1);
    expect(loop.busy).toBe(false);
  });
});

describe('ticks', () => {
  for (const [tick, rightAfter] of [['kick', 1], ['when-idle', 0]] as const) {
    it(`'${tick}' ticks run a pass every everyMs; ticks during a pass leave ${rightAfter} more right after it`, async () => {
      const steps = new Steps();
      const loop = steps.loop({ everyMs: 100, tick });
      loop.start();
      await vi.advanceTimersByTimeAsync(99);
      expect(steps.started).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(steps.started).toBe(1);
      await vi.advanceTimersByTimeAsync(300);
      steps.finish();
      await settle();
      expect(steps.started).toBe(1 + rightAfter);
      // Idle again: the next tick starts one.
      if (rightAfter === 1) steps.finish();
      await vi.advanceTimersByTimeAsync(100);
      expect(steps.started).toBe(2 + rightAfter);
      steps.finish();
      await loop.stop();
    });
  }
});

describe('stop', () => {
  it('resolves only once the pass under way has ended (drained)', async () => {
    const { steps, loop } = await kicked();
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await settle();
    expect([loop.stopped, stopped]).toStrictEqual([true, false]);
    steps.finish();
    await stopping;
    expect([steps.ended, stopped]).toStrictEqual([1, true]);
  });

  it('no pass starts after stop: not the one kicked for, nor a waiting one, nor a tick', async () => {
    const failing = new Steps();
    failing.failing = 1;
    const { steps, loop } = await kicked({ everyMs: 50 }, failing);
    loop.kick(); // one more after the pass under way
    const stopping = loop.stop();
    steps.finish();
    await stopping;
    loop.kick();
    await vi.advanceTimersByTimeAsync(60_000);
    expect([steps.started, loop.busy]).toStrictEqual([1, false]);
  });

  it('a pass waiting out its back-off does not start after stop', async () => {
    const { steps, loop } = await afterFailedPass(1);
    loop.kick();
    expect(loop.busy).toBe(true);
    await loop.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(steps.started).toBe(1);
  });
});
