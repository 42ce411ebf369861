/**
 * The log's queue of appended records not yet in a batch: an array that keeps its capacity. A
 * batch takes a prefix; once everything is taken both ends go back to 0. (`queue = []` per batch,
 * or slice() of the rest, made a new array and grew it again store by store: garbage per store.)
 */
export class RecordQueue<T> {
  private readonly items: (T | undefined)[] = [];
  private head = 0;
  private tail = 0;

  get length(): number {
    return this.tail - this.head;
  }

  push(item: T): void {
    this.items[this.tail++] = item;
  }

  /** The i-th item from the head. */
  at(i: number): T {
    return this.items[this.head + i]!;
  }

  /** Drops the first `n` items (a batch took them). */
  drop(n: number): void {
    for (let i = 0; i < n; i++) this.items[this.head + i] = undefined;
    this.head += n;
    if (this.head === this.tail) this.head = this.tail = 0;
  }

  /** Takes every item out (the failure paths: a new array). */
  takeAll(): T[] {
    const all = this.items.slice(this.head, this.tail) as T[];
    this.drop(this.length);
    return all;
  }

  /** Keeps the items `keep` says yes to, in order; returns the others. */
  keepOnly(keep: (item: T) => boolean): T[] {
    const out: T[] = [];
    for (const item of this.takeAll()) {
      if (keep(item)) this.push(item);
      else out.push(item);
    }
    return out;
  }
}
