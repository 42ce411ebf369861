/**
 * HEAD on the metrics listener answers headers only (the spec's metrics endpoints a 405): a body after a HEAD answer would be read as
 * the next answer on the connection (this uWS build sends one if end() is given a body).
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type MetricsNode, startMetricsNode } from '../helpers/metrics.js';

let m: MetricsNode;
beforeAll(async () => {
  m = await startMetricsNode();
});
afterAll(async () => {
  expect(await m.node.stop()).toBe(0);
});

/**
 * HEAD `path`, then (once its answer is in) GET /health on the same connection: the statuses of
 * both answers, in order. Not pipelined: this uWS build drops a connection that pipelines behind
 * an answer still being computed, as the metrics answers are.
 */
function headThenGet(port: number, path: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let text = '';
    let asked = false;
    const socket = connect(port, '127.0.0.1', () => socket.write(`HEAD ${path} HTTP/1.1\r\nHost: x\r\n\r\n`));
    socket.on('data', (d) => {
      text += d.toString('latin1');
      if (!asked && text.includes('\r\n\r\n')) {
        asked = true;
        socket.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      }
    });
    socket.on('close', () => resolve(text.split('\r\n').filter((l) => /^HTTP\/1\.1 \d{3}/.test(l)).map((l) => l.slice(9, 12))));
    socket.on('error', reject);
    setTimeout(() => socket.destroy(), 3000);
  });
}

// The spec's metrics endpoints take GET only: their HEAD is a 405, without a body too.
it.each([['/metrics', '405'], ['/api/v1/metrics', '405'], ['/health', '200'], ['/', '200'], ['/nowhere', '404']])('HEAD %s answers %s without a body', async (path, status) => {
  const statuses = await headThenGet(m.metricsPort, path);
  expect(statuses).toEqual([status, '200']);
});
