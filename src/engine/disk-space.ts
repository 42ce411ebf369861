/**
 * Disk space: what the engine may still take for data, and the reserve it keeps for what must
 * work on a full disk (tombstones, index commits, compaction's relocations, a restart).
 *
 *   ┌──────────────────── file system ────────────────────────────────────┐
 *   │ used ...                 │ free for data │ reserve: free  │ RESERVE  │
 *   └──────────────────────────────────────────────────────────────────────┘
 *                                 stores take     deletes and      ballast file,
 *                                                 compaction take  freed when the
 *                                                                  disk is full
 *
 * Data (segment space for stores, chunks of large blobs) is taken only while the file system keeps
 * the reserve free after it; beyond, the store is refused with 507 and nothing is written. Part of
 * the reserve is held for real in a ballast file (`<data-dir>/RESERVE`, as CockroachDB does), so
 * that a disk filled to the last byte by someone else still leaves the node room to start, delete
 * and compact: the ballast is released when the free space runs out and made again when there is
 * room. statfs is a cheap call (no I/O, ~1-2 us) and is read at every take, so the figure is never
 * stale; bytes taken but not yet written count as used until they are.
 */
import { promises as fsp, constants as fsc, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { BlobstoreError } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { allocate } from './fs-util.js';

/** The reserve never takes more than this share of the file system (a small disk stays usable). */
const RESERVE_SHARE_MAX = 0.05;

/**
 * The ballast holds half the reserve, at most this much; the other half is kept free by
 * accounting and serves deletes and compaction first, so the ballast goes only when someone else
 * took that half.
 */
const BALLAST_BYTES_MAX = 64 * 1024 * 1024;

/** Below this much free space above the reserve the backend counts as full (health, refusals). */
const FULL_MARGIN_BYTES = 1024 * 1024;

/** With less than this free on the file system, the ballast goes (an index commit needs pages). */
const BALLAST_RELEASE_BELOW_BYTES_MAX = 4 * 1024 * 1024;

export const insufficientStorage = (message: string, cause?: unknown): BlobstoreError =>
  new BlobstoreError('insufficient_storage', message, { cause });

export class DiskSpace {
  /** The reserve in force: the setting, capped at RESERVE_SHARE_MAX of the file system. */
  readonly reserveBytes: number;
  readonly capacityBytes: number;
  /** What the ballast file should hold, and what it holds now. */
  private readonly ballastTargetBytes: number;
  /** Free space below which the ballast is released: half the accounted part of the reserve. */
  private readonly releaseBelowBytes: number;
  private ballastBytes = 0;
  private ballastChanging: Promise<void> | undefined;
  private readonly ballastPath: string;
  /** Taken for data, not yet written (statfs does not show it yet). */
  private pendingBytes = 0;
  /** Stores refused for space since start. */
  refusals = 0;
  /** The last take was refused: the log says so once, and once when room comes back. */
  private refusing = false;

  private constructor(
    private readonly dir: string,
    reserveSettingBytes: number,
    private readonly log: Logger,
  ) {
    const fs = statfsSync(dir);
    this.capacityBytes = fs.blocks * fs.bsize;
    this.reserveBytes = Math.min(reserveSettingBytes, Math.floor(this.capacityBytes * RESERVE_SHARE_MAX));
    this.ballastTargetBytes = Math.min(Math.floor(this.reserveBytes / 2), BALLAST_BYTES_MAX);
    this.releaseBelowBytes = Math.min(BALLAST_RELEASE_BELOW_BYTES_MAX, Math.floor((this.reserveBytes - this.ballastTargetBytes) / 2));
    this.ballastPath = join(dir, 'RESERVE');
  }

  /**
   * Opens the accounting of a data dir. On a disk with almost nothing free the ballast is
   * released first, so that recovery's index commit and the first deletes have room.
   */
  static async open(dir: string, reserveSettingBytes: number, log: Logger): Promise<DiskSpace> {
    const space = new DiskSpace(dir, reserveSettingBytes, log);
    space.ballastBytes = await fsp.stat(space.ballastPath).then((st) => st.size, () => 0);
    const tooLarge = space.ballastBytes > space.ballastTargetBytes; // the reserve setting went down
    if (tooLarge || space.physicalFreeBytes() < space.releaseBelowBytes) await space.releaseBallast();
    else await space.restoreBallast();
    return space;
  }

  /** Free bytes on the file system, as statfs says. */
  private physicalFreeBytes(): number {
    const fs = statfsSync(this.dir);
    return fs.bavail * fs.bsize;
  }

  /** Free bytes, less what is taken and not yet written. */
  freeBytes(): number {
    return this.physicalFreeBytes() - this.pendingBytes;
  }

  /** Bytes data may still take before the reserve (the ballast holds part of it already). */
  headroomBytes(): number {
    return this.freeBytes() - (this.reserveBytes - this.ballastBytes);
  }

  /**
   * Takes between `minBytes` and `wantBytes` for data (as much as the headroom allows) and
   * returns how many; throws 507 when not even `minBytes` fit above the reserve. Hand the
   * amount back with written() once the bytes are on disk or were never written.
   */
  takeForData(minBytes: number, wantBytes = minBytes): number {
    const headroom = this.headroomBytes();
    if (headroom < minBytes) {
      this.refusals++;
      const message = `not enough disk space: ${Math.max(0, headroom)} bytes free above the ${this.reserveBytes}-byte reserve, ${minBytes} needed`;
      if (!this.refusing) this.log.error({ headroomBytes: headroom, reserveBytes: this.reserveBytes }, `disk full: stores are refused (507) until space is freed; ${message}`);
      this.refusing = true;
      throw insufficientStorage(message);
    }
    if (this.refusing) this.log.info({ headroomBytes: headroom }, `disk has room again: ${headroom} bytes free above the reserve; stores are accepted`);
    this.refusing = false;
    const taken = Math.min(wantBytes, headroom);
    this.pendingBytes += taken;
    return taken;
  }

  /** Bytes taken by takeForData() are on disk now (or were given up). */
  written(bytes: number): void {
    this.pendingBytes -= bytes;
  }

  /** The disk cannot take data now: stores are being refused (health reports it). */
  full(): boolean {
    return this.headroomBytes() < FULL_MARGIN_BYTES;
  }

  /**
   * Before work that frees space (tombstones, index commits, compaction): when the file system
   * is nearly out of space (someone else took the reserve), the ballast goes so that it can run.
   * Resolves true when the ballast was released now.
   */
  async makeRoom(bytes = 0): Promise<boolean> {
    if (this.ballastBytes === 0 || this.physicalFreeBytes() >= Math.max(bytes, this.releaseBelowBytes)) return false;
    await this.releaseBallast();
    return true;
  }

  private async releaseBallast(): Promise<void> {
    await this.ballastChanging;
    if (this.ballastBytes === 0) return;
    this.ballastChanging = fsp.rm(this.ballastPath, { force: true }).then(() => {
      this.log.warn({ ballastBytes: this.ballastBytes, path: this.ballastPath }, `disk nearly full: released the ${this.ballastBytes}-byte ballast of the reserve`);
      this.ballastBytes = 0;
    });
    await this.ballastChanging.finally(() => (this.ballastChanging = undefined));
  }

  /** Makes the ballast again once the file system has the whole reserve free (compaction calls it). */
  async restoreBallast(): Promise<void> {
    await this.ballastChanging;
    if (this.ballastBytes >= this.ballastTargetBytes || this.physicalFreeBytes() - this.pendingBytes < this.reserveBytes + FULL_MARGIN_BYTES) return;
    const target = this.ballastTargetBytes;
    this.ballastChanging = (async () => {
      const handle = await fsp.open(this.ballastPath, fsc.O_RDWR | fsc.O_CREAT, 0o600);
      try {
        await allocate(handle, 0, target);
        await handle.sync();
        this.ballastBytes = target;
      } catch {
        // No room after all (a race with stores): try again at the next call.
        await handle.truncate(0).catch(() => undefined);
        this.ballastBytes = 0;
      } finally {
        await handle.close();
      }
    })();
    await this.ballastChanging.finally(() => (this.ballastChanging = undefined));
  }
}
