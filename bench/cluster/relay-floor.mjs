// The floor of an EC read on one machine: the bytes of k data columns over the same hops as the
// node's EC GET, with nothing else done. Holders stream column files over loopback to a relay,
// which takes one cell of each column in turn and sends it to the client. No check of any byte
// (the node hashes every byte once; a relay that hashed each cell as it took it ran slower than
// the node, which hashes a cell as it arrives), no placement, no metrics: what the hops themselves
// cost, measured in the same run as the cluster's GET (ec.bench.ts), as the bare uWS echo is for
// the node's HTTP figures.
//
// usage:
//   node bench/cluster/relay-floor.mjs holder PORT FILE BYTES
//       GET /column streams the first BYTES of FILE (1 MiB reads on libuv's pool, READ_AHEAD ahead).
//   node bench/cluster/relay-floor.mjs relay PORT CELL_BYTES COLUMN_BYTES LOCAL_FILE|- HOLDER_PORT...
//       GET /blob: the columns (the local file first when given, then each holder's) cell by cell.
// Both answer /healthz 200; SIGTERM stops them.
import { closeSync, openSync, read } from 'node:fs';
import { connect } from 'node:net';
import uWS from 'uWebSockets.js';

const MiB = 1024 * 1024;
/** Cells a column stream holds ahead of the relay before its reads pause. */
const QUEUE_CELLS = 16;
/** Cells a holder reads ahead of its socket. */
const READ_AHEAD = 6;

const [mode, portArg, ...rest] = process.argv.slice(2);
const app = uWS.App();
app.get('/healthz', (res) => void res.end('ok'));

/**
 * Sends `bytes` as part of a body of `total` with backpressure; resolves once uWS took all of it.
 * This uWS keeps the first onWritable handler a response registers: one handler serves every send.
 */
function sender(res, total) {
  let pending;
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
    pending?.reject(new Error('client gone'));
  });
  res.onWritable((offset) => {
    if (!pending) return true;
    const [ok, done] = res.tryEnd(pending.bytes.subarray(offset - pending.at), total);
    if (ok || done) {
      const p = pending;
      pending = undefined;
      p.resolve();
    }
    return ok;
  });
  return {
    head: (status) => res.cork(() => res.writeStatus(status)),
    send(bytes) {
      if (aborted) return Promise.reject(new Error('client gone'));
      const at = res.getWriteOffset();
      let ok = false;
      let done = false;
      res.cork(() => ([ok, done] = res.tryEnd(bytes, total)));
      if (ok || done) return Promise.resolve();
      return new Promise((resolve, reject) => (pending = { bytes, at, resolve, reject }));
    },
  };
}

/**
 * Cell buffers reused from read to read, as the node's slabs are: fresh memory costs a page fault
 * per page, which would make the floor dearer than the node.
 */
class Cells {
  free = [];

  constructor(bytes) {
    this.bytes = bytes;
  }

  get() {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.bytes);
  }

  /** Back to the pool (a short last cell is a view of one: dropped). */
  put(cell) {
    if (cell.length === this.bytes && cell.byteOffset === 0) this.free.push(cell);
  }
}

/** The next cells of a file, read on libuv's pool into buffers of `pool`, `ahead` at most waiting. */
function fileCells(path, bytes, pool, ahead) {
  const cellBytes = pool.bytes;
  const fd = openSync(path, 'r');
  const ready = [];
  const waiters = [];
  let next = 0;
  let reading = 0;
  const pump = () => {
    while (next < bytes && ready.length + reading < ahead) {
      const at = next;
      const length = Math.min(cellBytes, bytes - at);
      next += length;
      reading++;
      const cell = pool.get().subarray(0, length);
      read(fd, cell, 0, length, at, (err, n) => {
        reading--;
        if (err || n !== length) throw err ?? new Error(`${path}: short read at ${at}`);
        const w = waiters.shift();
        if (w) w(cell);
        else ready.push(cell);
        pump();
      });
    }
  };
  pump();
  return {
    take() {
      const cell = ready.shift();
      pump();
      return cell ? Promise.resolve(cell) : new Promise((resolve) => waiters.push(resolve));
    },
    close: () => closeSync(fd),
  };
}

/**
 * A holder's column over loopback: the kernel reads straight into the cell being filled (net's
 * `onread` with a buffer per read), so a cell is queued whole without a copy; the socket's reads
 * pause while QUEUE_CELLS cells wait.
 */
function remoteCells(port, bytes, pool) {
  const cells = [];
  const waiters = [];
  /** The cell being filled, and how much of it the next cells' bytes take (the last may be short). */
  let cell = pool.get();
  let want = Math.min(pool.bytes, bytes);
  let fill = 0;
  let head = true;
  let received = 0;
  let paused = false;
  const full = () => {
    received += fill;
    const ready = cell.subarray(0, fill);
    const w = waiters.shift();
    if (w) w(ready);
    else cells.push(ready);
    cell = pool.get();
    want = Math.min(pool.bytes, bytes - received);
    fill = 0;
  };
  const socket = connect({
    host: '127.0.0.1', port, noDelay: true,
    onread: {
      buffer: () => cell.subarray(fill, Math.max(want, fill + 1)),
      callback: (n) => {
        fill += n;
        if (head) {
          const end = cell.subarray(0, fill).indexOf('\r\n\r\n');
          if (end < 0) return true;
          if (!cell.subarray(0, 12).toString('latin1').startsWith('HTTP/1.1 200')) throw new Error(`holder ${port}: ${cell.subarray(0, end).toString('latin1')}`);
          head = false;
          cell.copy(cell, 0, end + 4, fill);
          fill -= end + 4;
        }
        if (fill === want && want > 0) full();
        if (cells.length >= QUEUE_CELLS) {
          paused = true;
          return false;
        }
        return true;
      },
    },
  });
  socket.on('connect', () => socket.write(`GET /column HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
  socket.on('error', (err) => {
    throw err;
  });
  return {
    take() {
      const ready = cells.shift();
      if (paused && cells.length < QUEUE_CELLS) {
        paused = false;
        socket.resume();
      }
      return ready ? Promise.resolve(ready) : new Promise((resolve) => waiters.push(resolve));
    },
    close: () => socket.destroy(),
  };
}

if (mode === 'holder') {
  const [path, bytesArg] = rest;
  const bytes = Number(bytesArg);
  const holderCells = new Cells(MiB);
  app.get('/column', (res) => {
    const out = sender(res, bytes);
    const cells = fileCells(path, bytes, holderCells, READ_AHEAD);
    out.head('200 OK');
    void (async () => {
      try {
        for (let at = 0; at < bytes; at += MiB) {
          const cell = await cells.take();
          await out.send(cell);
          holderCells.put(cell);
        }
      } catch {
        // the reader went away
      } finally {
        cells.close();
      }
    })();
  });
} else if (mode === 'relay') {
  const [cellArg, columnArg, local, ...holders] = rest;
  const cellBytes = Number(cellArg);
  const columnBytes = Number(columnArg);
  const relayCells = new Cells(cellBytes);
  app.get('/blob', (res) => {
    const streams = [...(local === '-' ? [] : [fileCells(local, columnBytes, relayCells, QUEUE_CELLS)]), ...holders.map((p) => remoteCells(Number(p), columnBytes, relayCells))];
    const total = streams.length * columnBytes;
    const out = sender(res, total);
    out.head('200 OK');
    void (async () => {
      try {
        for (let at = 0; at < columnBytes; at += cellBytes) {
          for (const s of streams) {
            const cell = await s.take();
            await out.send(cell);
            relayCells.put(cell);
          }
        }
      } catch {
        // the client went away
      } finally {
        for (const s of streams) s.close();
      }
    })();
  });
} else {
  console.error('usage: relay-floor.mjs holder PORT FILE BYTES | relay PORT CELL_BYTES COLUMN_BYTES LOCAL_FILE|- HOLDER_PORT...');
  process.exit(2);
}

app.listen('127.0.0.1', Number(portArg), (token) => {
  if (!token) {
    console.error(`relay-floor: cannot listen on 127.0.0.1:${portArg}`);
    process.exit(1);
  }
  console.log(`relay-floor ${mode}: listening on http://127.0.0.1:${portArg}`);
});
const stop = () => process.exit(0);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
