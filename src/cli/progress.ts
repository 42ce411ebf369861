/**
 * A progress line on a terminal's stderr for transfers (bytes, rate, files done), redrawn at most
 * ten times a second; nothing when stderr is not a terminal (a script's output stays clean).
 */
const REDRAW_MS = 100;

const human = (n: number): string =>
  n < 1024 ** 2 ? `${(n / 1024).toFixed(0)} KiB` : n < 1024 ** 3 ? `${(n / 1024 ** 2).toFixed(1)} MiB` : `${(n / 1024 ** 3).toFixed(2)} GiB`;

export class Progress {
  private done = 0;
  private files = 0;
  private drawnAt = 0;
  private readonly started = Date.now();

  private constructor(
    private totalBytes: number | undefined,
    private readonly totalFiles: number,
  ) {}

  /** A progress line, when stderr is a terminal. */
  static onTerminal(totalBytes: number | undefined, totalFiles: number): Progress | undefined {
    return process.stderr.isTTY ? new Progress(totalBytes, totalFiles) : undefined;
  }

  bytes(n: number): void {
    this.done += n;
    this.maybeDraw();
  }

  /** Where one transfer is (`total`: its size, when known). */
  at(bytes: number, total: number | undefined): void {
    this.done = bytes;
    this.totalBytes = total;
    this.maybeDraw();
  }

  file(): void {
    this.files++;
  }

  private maybeDraw(): void {
    if (Date.now() - this.drawnAt >= REDRAW_MS) this.draw();
  }

  draw(): void {
    this.drawnAt = Date.now();
    const seconds = Math.max(0.001, (this.drawnAt - this.started) / 1000);
    const of = this.totalBytes ? ` of ${human(this.totalBytes)} (${Math.floor((100 * this.done) / this.totalBytes)}%)` : '';
    const files = this.totalFiles > 1 ? `  ${this.files}/${this.totalFiles} files` : '';
    process.stderr.write(`\r${human(this.done)}${of}  ${human(this.done / seconds)}/s${files}\x1b[K`);
  }

  /** Takes the line away (before other output, and at the end). */
  clear(): void {
    process.stderr.write('\r\x1b[K');
  }
}
