/**
 * The one wait of the tests: polls `check` until it holds, or fails naming `what` after
 * `timeoutMs`. Tests wait for a condition, never for a fixed time, so that they pass on a machine
 * half as fast (timeouts are sized for that one).
 */
export interface WaitOptions {
  /** What is waited for (the failure's message). */
  what: string;
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
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${options.what}`);
    await new Promise((r) => setTimeout(r, options.pollMs ?? 50));
  }
}
