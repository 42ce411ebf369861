/**
 * A bounded map whose entries expire: answers to "who holds this blob" kept for a while so that
 * repeated reads skip a round trip to the peers. At most `maxEntries` (the oldest insertion goes
 * first); an entry older than `ttlMs` is not answered.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; atMs: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
  ) {}

  get(key: string, nowMs = Date.now()): V | undefined {
    const e = this.entries.get(key);
    return e && nowMs - e.atMs < this.ttlMs ? e.value : undefined;
  }

  set(key: string, value: V, nowMs = Date.now()): void {
    if (!this.entries.has(key) && this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, atMs: nowMs });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
