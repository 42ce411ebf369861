import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { writeAllSync } from '../../util/write-all.js';
import { join } from 'node:path';
import { type Database, type RootDatabase, open } from 'lmdb';
import { assert } from '../../util/assert.js';
import type { CreateOrder } from './model.js';

/**
 * Durable order storage in LMDB. Two tables in one environment:
 *
 *   orders      id -> { a: amount digits, c: currency, n: note | null, s: status }
 *   by-status   [status, id] -> 1        (lists one status in id order without a scan)
 *
 * Ids ascend from 1. The next id is one past the highest stored id; orders are never deleted, so
 * an id that was ever acknowledged is never handed out again, across restarts too.
 *
 * Durability: lmdb-js resolves a write's promise when the transaction commits, before the data is
 * flushed (overlappingSync). Create and cancel wait for `flushed` as well, so a 200 means on disk.
 * Concurrent requests share commits and flushes (lmdb-js batches writes of one event-loop turn).
 */

export type OrderStatus = 'pending' | 'paid' | 'canceled';
const STATUSES: ReadonlySet<string> = new Set<OrderStatus>(['pending', 'paid', 'canceled']);

export interface Order {
  readonly id: number;
  /** Exact decimal digits (amounts go up to 2^63-1, beyond a JS number's exact range). */
  readonly amount: string;
  readonly currency: string;
  readonly status: string;
}

interface OrderRecord {
  readonly a: string;
  readonly c: string;
  readonly n: string | null;
  readonly s: string;
}

export class OrderStore {
  private nextId: number;

  private constructor(
    private readonly lockPath: string,
    private readonly env: RootDatabase,
    private readonly orders: Database<OrderRecord, number>,
    private readonly byStatus: Database<number, [string, number]>,
  ) {
    let last = 0;
    for (const key of orders.getKeys({ reverse: true, limit: 1 })) last = key;
    assert(Number.isSafeInteger(last) && last >= 0, 'stored order ids are non-negative integers');
    this.nextId = last + 1;
  }

  static open(dataDir: string): OrderStore {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const lockPath = lockDataDir(dataDir);
    const env = open({ path: join(dataDir, 'orders.mdb'), maxDbs: 4, compression: false });
    const orders = env.openDB<OrderRecord, number>({ name: 'orders' });
    const byStatus = env.openDB<number, [string, number]>({ name: 'by-status' });
    return new OrderStore(lockPath, env, orders, byStatus);
  }

  async create(order: CreateOrder): Promise<Order> {
    const id = this.nextId++;
    assert(Number.isSafeInteger(id) && id >= 1, 'order ids are safe positive integers');
    assert(order.amount > 0n, 'amount was validated positive');
    const record: OrderRecord = { a: order.amount.toString(), c: order.currency, n: order.note, s: 'pending' };
    await this.env.transaction(() => {
      this.orders.put(id, record);
      this.byStatus.put([record.s, id], 1);
    });
    await this.env.flushed;
    return toOrder(id, record);
  }

  get(id: number): Order | undefined {
    const record = this.orders.get(id);
    return record === undefined ? undefined : toOrder(id, record);
  }

  /**
   * Orders of one status in id order, at most `limit`. Any status string may be asked for. The
   * page grows with the orders found, so a large limit costs nothing by itself.
   */
  list(status: string, limit: number): Order[] {
    const result: Order[] = [];
    // Only the three statuses are ever stored; others (of any length: LMDB keys are bounded) match nothing.
    if (!STATUSES.has(status)) return result;
    const range = this.byStatus.getKeys({ start: [status, 0], end: [status, Number.MAX_SAFE_INTEGER], limit });
    for (const [, id] of range) {
      const record = this.orders.get(id);
      if (record !== undefined) result.push(toOrder(id, record));
    }
    return result;
  }

  /** Cancels any existing order (idempotent); undefined when there is no such order. */
  async cancel(id: number): Promise<Order | undefined> {
    const current = this.orders.get(id);
    if (current === undefined) return undefined;
    if (current.s === 'canceled') return toOrder(id, current);
    const updated = await this.env.transaction(() => {
      const record = this.orders.get(id);
      if (record === undefined || record.s === 'canceled') return record;
      const next: OrderRecord = { ...record, s: 'canceled' };
      this.orders.put(id, next);
      this.byStatus.remove([record.s, id]);
      this.byStatus.put(['canceled', id], 1);
      return next;
    });
    await this.env.flushed;
    return updated === undefined ? undefined : toOrder(id, updated);
  }

  async close(): Promise<void> {
    await this.env.flushed;
    await this.env.close();
    rmSync(this.lockPath, { force: true });
  }
}

/** A second service on the same data dir (LMDB would allow it) would hand out the same ids. */
export class DataDirInUseError extends Error {
  override readonly name = 'DataDirInUseError';
}

/** Takes `<dataDir>/LOCK` (O_EXCL, our pid inside); a lock left by a dead process is taken over. */
function lockDataDir(dataDir: string): string {
  const lockPath = join(dataDir, 'LOCK');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      writeAllSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return lockPath;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number(readFileSync(lockPath, 'utf8').trim());
    if (holder > 0 && holder !== process.pid && running(holder)) {
      throw new DataDirInUseError(`orders data dir ${dataDir} is in use by another process (pid ${holder})`);
    }
    rmSync(lockPath, { force: true });
  }
  throw new DataDirInUseError(`orders data dir ${dataDir}: could not take the lock`);
}

/** Exists and is not a zombie (an exited process its parent has not reaped yet). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    try {
      process.kill(pid, 0);
      return process.platform !== 'linux';
    } catch {
      return false;
    }
  }
}

function toOrder(id: number, record: OrderRecord): Order {
  return { id, amount: record.a, currency: record.c, status: record.s };
}
