/**
 * A bandwidth cap for background copies (repair, handoff): take(n) resolves once n bytes fit the
 * rate. A take larger than one second's worth waits its share and passes whole, so one large blob
 * is never refused, only delayed. One bucket is shared by everything it caps; its rate can change
 * while it runs (repair-control.ts raises it for a while).
 */
export class TokenBucket {
  private tokens: number;
  private lastMs = performance.now();

  constructor(private bytesPerSecond: number) {
    this.tokens = bytesPerSecond;
  }

  get rate(): number {
    return this.bytesPerSecond;
  }

  /** Bytes per second from now on (0: no cap). */
  setRate(bytesPerSecond: number): void {
    this.refill();
    this.bytesPerSecond = bytesPerSecond;
    this.tokens = Math.min(this.tokens, bytesPerSecond);
  }

  async take(bytes: number): Promise<void> {
    if (this.bytesPerSecond <= 0) return;
    this.refill();
    this.tokens -= bytes;
    if (this.tokens >= 0) return;
    const waitMs = (-this.tokens / this.bytesPerSecond) * 1000;
    await new Promise((r) => setTimeout(r, waitMs));
    this.refill();
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.bytesPerSecond, this.tokens + ((now - this.lastMs) / 1000) * this.bytesPerSecond);
    this.lastMs = now;
  }
}
