/**
 * Crash consistency: a node is SIGKILLed at random moments while concurrent clients store small
 * and large blobs and delete some. After each restart every acknowledged blob reads back
 * byte-exact, acknowledged deletes stay deleted, and whatever else is visible is whole (an
 * unacknowledged store may or may not have landed, but never half).
 * The index journal merges every 32 changes here, so kills land in merges too.
 * CRASH_CYCLES sets the number of cycles (20 in `make test`, 100 in `make bench`); the `log`
 * acknowledgement mode runs half as many, and so does a run on a nearly full disk (a tmpfs of its
 * own, root only), where stores are refused (507) and deletes and compaction churn at the edge.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectedId, patternBytes } from './helpers/blobs.js';
import { type NodeProcess, startNode, tempDir } from './helpers/node-process.js';
import { mountTmpfs, type Tmpfs } from './helpers/tmpfs.js';

const CYCLES = Number(process.env.CRASH_CYCLES ?? 20);
const WRITERS = 12;
// A small index journal: its merges (src/index/blob-journal.ts) run many times a cycle, and some meet the kill.
const BASE_ARGS = ['--segment-size-bytes', '4MiB', '--small-blob-max-bytes', '64KiB', '--compaction-interval-ms', '300', '--compaction-live-ratio', '60',
  '--index-merge-records', '32'];

interface Blob {
  seed: number;
  size: number;
}

/** Sizes: mostly small (segment records), some large (own files, several 1 MiB chunks). */
function sizeFor(seed: number): number {
  const r = (seed * 2654435761) >>> 0;
  return r % 10 === 0 ? 65 * 1024 + (r % (2 * 1024 * 1024)) : r % 8192;
}

const content = (b: Blob): Buffer => patternBytes(b.size, b.seed);

async function readBack(url: string, id: string): Promise<Buffer | number> {
  const res = await fetch(`${url}/v1/blobs/${id}`);
  if (res.status !== 200) return res.status;
  return Buffer.from(await res.arrayBuffer());
}

async function listAll(url: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '';
  for (;;) {
    const res = await fetch(`${url}/v1/blobs?limit=10000${cursor ? `&cursor=${cursor}` : ''}`);
    const page = (await res.json()) as { ids: string[]; next_cursor?: string; has_more: boolean };
    ids.push(...page.ids);
    if (!page.has_more) return ids;
    cursor = page.next_cursor!;
  }
}

const MiB = 1024 * 1024;

/** A tmpfs with all but 12 MiB taken by a filler, or why there is none. */
function nearlyFullDisk(): Tmpfs | string {
  const fs = mountTmpfs(40 * MiB);
  if (typeof fs !== 'string') fs.fill(12 * MiB);
  return fs;
}

const fullDisk = nearlyFullDisk();

describe.each([
  { mode: 'index', cycles: CYCLES, disk: 'roomy' },
  { mode: 'log', cycles: Math.ceil(CYCLES / 2), disk: 'roomy' },
  { mode: 'index', cycles: Math.ceil(CYCLES / 2), disk: 'nearly full' },
])('crash consistency under SIGKILL (durableAck $mode, $disk disk)', ({ mode, cycles, disk }) => {
  const full = disk === 'nearly full';
  const skip = full && typeof fullDisk === 'string' ? fullDisk : '';
  const dataDir = full ? (typeof fullDisk === 'string' ? '' : join(fullDisk.path, 'data')) : tempDir();
  const ARGS = [...BASE_ARGS, '--durable-ack', mode];
  // At the edge of a full disk more deletes keep space churning (compaction, refusals, reuse).
  const deleteShare = full ? 0.3 : 0.1;
  let node: NodeProcess | undefined;
  afterAll(async () => {
    await node?.stop();
    if (full && typeof fullDisk !== 'string') fullDisk.unmount();
  });

  it.skipIf(skip !== '')(`keeps every acknowledged write over ${cycles} kill/restart cycles${skip ? ` - skipped: ${skip}` : ''}`, async () => {
    const acked = new Map<string, Blob>();
    /** Stores acknowledged over the run (acked holds those still live: deletes take them out). */
    let acks = 0;
    let refused = 0;
    const deleted = new Set<string>();
    let seed = 1;
    for (let cycle = 0; cycle < cycles; cycle++) {
      node = await startNode({ dataDir, args: ARGS });
      const url = node.url;
      const inflight = new Map<string, Blob>();
      const deleting = new Set<string>();
      const recent: string[] = [];
      let stop = false;
      let firstAck!: () => void;
      const acknowledged = new Promise<void>((resolve) => (firstAck = resolve));
      let firstRefusal!: () => void;
      const refusedOnce = new Promise<void>((resolve) => (firstRefusal = resolve));

      // Verify what the previous cycles left: all recent acks, a sample of older ones, every delete.
      const ackedIds = [...acked.keys()];
      const sample = ackedIds.slice(-400).concat(ackedIds.filter(() => Math.random() < 0.02));
      for (const id of sample) {
        const got = await readBack(url, id);
        expect(got instanceof Buffer ? got.equals(content(acked.get(id)!)) : got, `cycle ${cycle}: acked ${id}`).toBe(true);
      }
      for (const id of deleted) expect(await readBack(url, id), `cycle ${cycle}: deleted ${id}`).toBe(404);
      const listed = new Set(await listAll(url));
      for (const id of ackedIds) expect(listed.has(id), `cycle ${cycle}: acked ${id} listed`).toBe(true);
      expect(readdirSync(join(dataDir, 'tmp'))).toEqual([]);

      const writer = async (): Promise<void> => {
        while (!stop) {
          if (Math.random() < deleteShare && (recent.length > 0 || (full && acked.size > 0))) {
            const id = recent.length > 0 ? recent.splice(Math.floor(Math.random() * recent.length), 1)[0]! : [...acked.keys()][Math.floor(Math.random() * acked.size)]!;
            if (!acked.has(id)) continue;
            deleting.add(id);
            const res = await fetch(`${url}/v1/blobs/${id}`, { method: 'DELETE' }).catch(() => undefined);
            if (res?.status === 200) {
              acked.delete(id);
              deleted.add(id);
            }
            continue;
          }
          const blob = { seed: seed++, size: sizeFor(seed) };
          const data = content(blob);
          const id = await expectedId(data);
          inflight.set(id, blob);
          const res = await fetch(`${url}/v1/blobs`, { method: 'POST', body: data, headers: { 'Content-Type': 'application/octet-stream' } }).catch(
            () => undefined,
          );
          if (res && (res.status === 201 || res.status === 200)) {
            expect(((await res.json()) as { id: string }).id).toBe(id);
            firstAck();
            acks++;
            acked.set(id, blob);
            deleted.delete(id);
            recent.push(id);
          } else if (res?.status === 507) {
            refused++;
            firstRefusal();
            await res.arrayBuffer();
          }
        }
      };
      const writers = Array.from({ length: WRITERS }, writer);
      // The nearly full disk reaches its edge before the first kill however slow the machine: the
      // cycles after it churn there.
      if (full && refused === 0) await Promise.race([refusedOnce, new Promise((r) => setTimeout(r, 120_000))]);
      // Time is the subject: a kill at a random moment of the load, or (one cycle in four) within
      // 10 ms of the first store this life acknowledged, before its index has committed anything.
      if (Math.random() < 0.25) {
        // (A disk too full for any store acknowledges none: then the kill comes after 2 s.)
        await Promise.race([acknowledged, new Promise((r) => setTimeout(r, 2000))]);
        await new Promise((r) => setTimeout(r, Math.random() * 10));
      } else {
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 400));
      }
      await node.kill();
      stop = true;
      await Promise.all(writers);

      // Restart and check the blobs whose fate was open at the kill: whole or absent.
      node = await startNode({ dataDir, args: ARGS });
      const visible = new Set(await listAll(node.url));
      for (const [id, blob] of inflight) {
        if (acked.has(id)) continue;
        if (!visible.has(id)) continue;
        const got = await readBack(node.url, id);
        expect(got instanceof Buffer && got.equals(content(blob)), `cycle ${cycle}: unacked ${id} whole`).toBe(true);
        acked.set(id, blob);
        deleted.delete(id);
      }
      for (const id of deleting) {
        if (!deleted.has(id) && !visible.has(id)) {
          acked.delete(id);
          deleted.add(id);
        }
        if (deleted.has(id) && visible.has(id)) throw new Error(`cycle ${cycle}: acknowledged delete of ${id} undone`);
      }
      expect(await node.stop()).toBe(0);
      node = undefined;
    }
    // The load did store: at least a few acknowledged stores a cycle. (Not what is live at the end:
    // on the nearly full disk the writers delete to make room, and the space bounds what stays.)
    expect(acks).toBeGreaterThan(cycles * 5);
    expect(acked.size).toBeGreaterThan(0);
    // The nearly full disk did fill: stores were refused along the way.
    if (full) expect(refused).toBeGreaterThan(0);
  }, 600_000);
});
