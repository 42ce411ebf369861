/**
 * The floor of an EC read on this machine (relay-floor.mjs): bare processes that move the bytes
 * of a blob's data columns over the hops the cluster's EC GET takes (holders to the node asked,
 * the node asked to the client), reading the column files the cluster wrote, so that the same
 * page-cache pages are read. Started per blob, stopped after its GETs.
 */
import { join } from 'node:path';
import { ROOT, startProcess, type RunningProcess } from '../node/lib.js';
import { freePort } from '../node/ports.js';

const SCRIPT = join(ROOT, 'bench/cluster/relay-floor.mjs');

export interface RelayFloor {
  /** GET it for the blob's bytes. */
  readonly url: string;
  /** The relay first, then the holders. */
  readonly pids: readonly number[];
  stop(): Promise<void>;
}

/**
 * A relay standing for node `asked`, and a holder for each data column another node holds:
 * `columns` maps a column's index to the node that holds it and its file.
 */
export async function startRelayFloor(columns: ReadonlyMap<number, { node: number; path: string }>, k: number, asked: number, columnBytes: number, cellBytes: number): Promise<RelayFloor> {
  const data = [...Array(k).keys()].map((i) => {
    const c = columns.get(i);
    if (!c) throw new Error(`relay floor: data column ${i} not found`);
    return c;
  });
  const local = data.find((c) => c.node === asked);
  const started: RunningProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(started.map((p) => p.stop()));
  };
  try {
    const holders: number[] = [];
    for (const c of data) {
      if (c === local) continue;
      const port = await freePort();
      started.push(await startProcess([SCRIPT, 'holder', String(port), c.path, String(columnBytes)], port));
      holders.push(port);
    }
    const port = await freePort();
    const relay = await startProcess([SCRIPT, 'relay', String(port), String(cellBytes), String(columnBytes), local?.path ?? '-', ...holders.map(String)], port);
    started.unshift(relay);
    return { url: `http://127.0.0.1:${port}/blob`, pids: started.map((p) => p.pid), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
