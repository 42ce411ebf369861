/**
 * Views of one scratch buffer by length, each made once: a hot path that hands out "the first n
 * bytes of the scratch" (valid until its next use) allocates no Buffer per call. At most `max`
 * lengths are kept (records come in a few sizes); past that the views are made again.
 */
export class ScratchViews {
  private readonly views = new Map<number, Buffer>();

  constructor(
    readonly buffer: Buffer,
    private readonly max = 64,
  ) {}

  /** buffer[0, length), the same object for the same length. */
  of(length: number): Buffer {
    let view = this.views.get(length);
    if (view === undefined) {
      if (this.views.size >= this.max) this.views.clear();
      view = this.buffer.subarray(0, length);
      this.views.set(length, view);
    }
    return view;
  }
}
