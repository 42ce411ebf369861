/**
 * The one wait of the tests: polls `check` until it holds, or fails naming `what` after
 * `timeoutMs`. Tests wait for a condition, never for a fixed time, so that they pass on a machine
 * half as fast (timeouts are sized for that one). A fixed sleep is left only where time itself is
 * the subject (a TTL, a deadline, a client that dribbles its bytes), with a comment that says so.
 */
export interface WaitOptions {
  /** What is waited for (the failure's message); a function is asked on failure, to say what was seen last. */
  what: string | (() => string);
  /** Default 20 s. */
  timeoutMs?: number;
  /** Default 50 ms. */
  pollMs?: number;
}

export async function waitFor(check: () => boolean | Promise<boolean>, options: WaitOptions): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) {
      const what = typeof options.what === 'string' ? options.what : options.what();
      throw new Error(`not within ${timeoutMs} ms: ${what}`);
    }
    await new Promise((r) => setTimeout(r, options.pollMs ?? 50));
  }
}
