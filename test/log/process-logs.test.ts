/**
 * What a real node and orders service write: JSON lines by default when stdout is not a terminal,
 * pretty lines with --log-format pretty, and only the levels --log-level (BLOBSTORE_LOG_LEVEL)
 * lets through.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { freePort } from '../cli/helpers.js';
import { logLines } from '../helpers/log.js';
import { MAIN, startNode, tempDir } from '../helpers/node-process.js';

describe('a node', () => {
  it('writes JSON lines with time, level, node and the listeners by default', async () => {
    const node = await startNode({ args: ['--node-id', 'log-node'] });
    expect(await node.stop()).toBe(0);
    const lines = logLines(node.output());
    expect(node.output().trimEnd().split('\n')).toHaveLength(lines.length);
    for (const line of lines) expect(line).toMatchObject({ name: 'blobstore', node: 'log-node', level: 'info', pid: node.child.pid });
    const api = lines.find((l) => l.listener === 'api');
    expect(api).toMatchObject({ url: node.url, msg: `node log-node listening on ${node.url}` });
    expect(lines.at(-1)!.msg).toBe('stopped');
  });

  it.each([
    ['--log-level warn', ['--log-level', 'warn'], {}],
    ['BLOBSTORE_LOG_LEVEL=warn', [], { BLOBSTORE_LOG_LEVEL: 'warn' }],
  ])('%s leaves out the info lines (the node still serves)', async (_name, args, env) => {
    const port = await freePort();
    const dir = tempDir();
    const child = spawn(process.execPath, [MAIN, 'serve', '--data-dir', dir, '--listen', `127.0.0.1:${port}`, '--metrics-addr', '', '--grpc-addr', '', ...args], {
      env: { ...process.env, BLOBSTORE_CONFIG: '/nonexistent/blobstore.json', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      await expect.poll(() => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0), { timeout: 15_000 }).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    rmSync(dir, { recursive: true, force: true });
    expect(out).toBe('');
  });

  it('--log-format pretty writes one readable line per event', async () => {
    const node = await startNode({ args: ['--log-format', 'pretty'] });
    expect(await node.stop()).toBe(0);
    const lines = node.output().trimEnd().split('\n');
    expect(logLines(node.output())).toStrictEqual([]);
    expect(lines.find((l) => l.includes('listening on'))).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO \(blobstore\): \[test-node\] node test-node listening on http:\/\/127\.0\.0\.1:\d+ /);
  });
});

describe('the orders service', () => {
  it('writes JSON lines named orders, its listener among them; a SIGTERM as soon as that line shows stops it cleanly', async () => {
    const dir = tempDir();
    const child = spawn(process.execPath, [MAIN, 'orders', 'serve', '--orders-addr', '127.0.0.1:0', '--orders-data-dir', dir], {
      env: { ...process.env, BLOBSTORE_CONFIG: '/nonexistent/blobstore.json' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    // The signal goes the moment the listener line is read, as a supervisor's would.
    const listening = new Promise<void>((resolve) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (logLines(out).some((l) => l.listener === 'orders')) resolve();
      });
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      await Promise.race([listening, exited.then(() => expect.fail(`exited before listening:\n${out}`))]);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    rmSync(dir, { recursive: true, force: true });
    const lines = logLines(out);
    expect(out.trimEnd().split('\n')).toHaveLength(lines.length);
    expect(lines[0]).toMatchObject({ name: 'orders', level: 'info', listener: 'orders', auth: false, url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
    expect(lines.map((l) => l.msg).slice(1)).toStrictEqual(['SIGTERM: stopping', 'stopped']);
  });
});
