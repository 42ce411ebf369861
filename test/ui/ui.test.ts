/**
 * The built-in web UI (GET / on the metrics listener) in real headless Chromium: against a real
 * node, and against a mock listener for what one node cannot show (bearer auth, a failing
 * endpoint, a cluster with peers).
 *
 * UI_SCREENSHOT=<path.png> also saves a 1280x800 screenshot of the page on a real node after
 * some puts and gets (the README's picture: UI_SCREENSHOT=src/ops/ui.png).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { startNode, type NodeProcess } from '../helpers/node-process.js';
import { TOKENS } from '../auth/helpers.js';
import { startAuthNode, type AuthNode } from '../auth/node.js';
import { waitFor } from '../helpers/wait.js';
import { startMockMetrics, type MockMetrics } from './mock-metrics.js';
import { HAVE_CHROMIUM, POLL, launch, open } from './browser.js';

const count = async (page: Page, selector: string): Promise<number> => Number(((await page.textContent(selector)) ?? '').replace(/,/g, ''));

async function metricsPort(node: NodeProcess): Promise<number> {
  const port = (): number | undefined => {
    const m = /metrics on http:\/\/\S+:(\d+)/.exec(node.output());
    return m ? Number(m[1]) : undefined;
  };
  await waitFor(() => port() !== undefined, { what: () => `a "metrics on" line:\n${node.output()}`, timeoutMs: 10_000 });
  return port()!;
}

describe.skipIf(!HAVE_CHROMIUM)('web UI on a real node', () => {
  let node: NodeProcess;
  let browser: Browser;
  let uiUrl: string;

  beforeAll(async () => {
    [node, browser] = await Promise.all([startNode({ args: ['--metrics-addr', '127.0.0.1:0'] }), launch()]);
    uiUrl = `http://127.0.0.1:${await metricsPort(node)}/`;
  });
  afterAll(async () => {
    await browser?.close();
    await node?.stop();
  });

  it('loads without console or page errors, asks nothing of other origins, and shows the node', async () => {
    const { page, problems } = await open(browser, uiUrl);
    await expect.poll(() => page.textContent('#node-id'), POLL).toBe('test-node');
    await expect.poll(() => page.textContent('#status'), POLL).toBe('live');
    expect(await page.textContent('#nodes')).toContain('test-node');
    expect(await page.textContent('#health-node')).toBe('up');
    expect(await page.textContent('#peers')).toBe('no peers');
    expect(await page.isVisible('#banner')).toBe(false);
    await page.waitForTimeout(2500); // one more poll: rates and the detail tables render without errors too
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('the put counter on the page moves after a put', async () => {
    const { page, problems } = await open(browser, uiUrl);
    await expect.poll(() => page.textContent('#node-id'), POLL).toBe('test-node');
    await expect.poll(() => page.textContent('#op-put-ok'), POLL).not.toBe('–');
    const before = await count(page, '#op-put-ok');
    const res = await putRaw(node.url, patternBytes(4096, 71));
    expect(res.status).toBe(201);
    await expect.poll(() => count(page, '#op-put-ok'), POLL).toBe(before + 1);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it.runIf(process.env.UI_SCREENSHOT)('saves a screenshot while puts, gets, stats, lists and deletes run', async () => {
    const { page, problems } = await open(browser, uiUrl);
    const ids: string[] = [];
    let running = true;
    // A load that varies over time, so the rates and sparklines have something to show.
    const traffic = async (): Promise<void> => {
      for (let i = 0; running; i++) {
        const res = await putRaw(node.url, patternBytes(4096 + ((i * 7919) % 60_000), 9000 + i));
        ids.push(((await res.json()) as { id: string }).id);
        await (await fetch(`${node.url}/v1/blobs/${ids[(i * 31) % ids.length]}`)).arrayBuffer();
        if (i % 4 === 0) await fetch(`${node.url}/v1/blobs/${ids[i % ids.length]}`, { method: 'HEAD' });
        if (i % 15 === 0) await (await fetch(`${node.url}/v1/blobs?limit=20`)).arrayBuffer();
        if (i % 25 === 24) await (await fetch(`${node.url}/v1/blobs/${ids.shift()}`, { method: 'DELETE' })).arrayBuffer();
        if (i % 200 === 100) await page.waitForTimeout(1500);
      }
    };
    const load = traffic();
    await page.waitForTimeout(20_000);
    await page.screenshot({ path: process.env.UI_SCREENSHOT!, type: 'png' });
    running = false;
    await load;
    expect(problems).toEqual([]);
    await page.context().close();
  });
});

describe.skipIf(!HAVE_CHROMIUM)('web UI on a real node with bearer auth', () => {
  let auth: AuthNode;
  let browser: Browser;

  beforeAll(async () => {
    [auth, browser] = await Promise.all([startAuthNode({ metrics: true }), launch()]);
  });
  afterAll(async () => {
    await browser?.close();
    await auth?.stop();
  });

  it('asks for a token, says when it lacks the read scope, and shows the node with a read token', async () => {
    expect(auth.metricsUrl).toBeDefined();
    const { page, problems } = await open(browser, `${auth.metricsUrl}/`);
    await expect.poll(() => page.isVisible('#token'), POLL).toBe(true);
    expect(await page.textContent('#banner')).toContain('401');
    await page.getByLabel('This node needs a bearer token').fill(TOKENS.write);
    await page.getByRole('button', { name: 'Use token' }).click();
    await expect.poll(() => page.textContent('#banner'), POLL).toContain('403');
    await page.getByLabel('This node needs a bearer token').fill(TOKENS.read);
    await page.getByRole('button', { name: 'Use token' }).click();
    await expect.poll(() => page.textContent('#node-id'), POLL).toBe('test-node');
    expect(await page.isVisible('#banner')).toBe(false);
    // The browser logs the 401 and 403 answers; nothing else may appear.
    expect(problems.filter((p) => !/status of 40[13]/.test(p))).toEqual([]);
    await page.context().close();
  });
});

describe.skipIf(!HAVE_CHROMIUM)('web UI against a mock metrics listener', () => {
  let browser: Browser;
  const mocks: MockMetrics[] = [];
  const mock = async (...args: Parameters<typeof startMockMetrics>): Promise<MockMetrics> => {
    const m = await startMockMetrics(...args);
    mocks.push(m);
    return m;
  };

  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all(mocks.map((m) => m.close()));
  });

  it('asks for a bearer token on 401, keeps it in sessionStorage and sends it', async () => {
    const m = await mock({ token: 's3cret' });
    const { page } = await open(browser, m.url);
    await expect.poll(() => page.isVisible('#token'), POLL).toBe(true);
    expect(await page.textContent('#banner')).toContain('401');
    await page.getByLabel('This node needs a bearer token').fill('s3cret');
    await page.getByRole('button', { name: 'Use token' }).click();
    await expect.poll(() => page.textContent('#node-id'), POLL).toBe('mock-node');
    expect(await page.isVisible('#token')).toBe(false);
    expect(await page.isVisible('#banner')).toBe(false);
    expect(await page.evaluate('sessionStorage.getItem("blobstore.token")')).toBe('s3cret');
    expect(m.state.authSeen).toContain('Bearer s3cret');
    await page.reload();
    await expect.poll(() => page.textContent('#node-id'), POLL).toBe('mock-node');
    expect(await page.isVisible('#token')).toBe(false);
    await page.context().close();
  });

  it('shows a visible error while polling fails and recovers when it answers again', async () => {
    const m = await mock();
    const { page, problems } = await open(browser, m.url);
    await expect.poll(() => page.textContent('#status'), POLL).toBe('live');
    m.state.failing = true;
    await expect.poll(() => page.isVisible('#banner'), POLL).toBe(true);
    expect(await page.textContent('#banner')).toContain('500');
    expect(await page.textContent('#status')).toBe('not updating');
    expect(await page.textContent('#updated')).toMatch(/^· last update \d\d:\d\d:\d\d$/);
    expect(await page.getAttribute('#main', 'class')).toContain('stale');
    m.state.failing = false;
    await expect.poll(() => page.isVisible('#banner'), POLL).toBe(false);
    expect(await page.textContent('#status')).toBe('live');
    expect(problems.filter((p) => !p.includes('status of 500'))).toEqual([]);
    await page.context().close();
  });

  it('shows every cluster node, peer health, counters with rates and latency tables', async () => {
    const gib = 2 ** 30;
    const m = await mock({
      peerHealth: { 'node-b': true, 'node-c': false },
      clusterNodes: [
        { node_id: 'mock-node', address: '10.0.0.1:8080', state: 'active', capacity_bytes: 500 * gib, used_bytes: 187 * gib, blob_count: 48213 },
        { node_id: 'node-b', address: '10.0.0.2:8080', state: 'active', capacity_bytes: 500 * gib, used_bytes: 420 * gib, blob_count: 90211 },
        { node_id: 'node-c', address: '10.0.0.3:8080', state: 'offline', capacity_bytes: 250 * gib, used_bytes: 240 * gib, blob_count: 30512 },
      ],
    });
    const { page, problems } = await open(browser, m.url);
    await expect.poll(() => page.locator('#nodes .node').count(), POLL).toBe(3);
    expect(await page.textContent('#nodes')).toContain('10.0.0.3:8080');
    expect(await page.locator('#nodes .pill.bad').textContent()).toBe('offline');
    expect(await page.locator('#nodes [role=meter]').nth(1).getAttribute('aria-valuenow')).toBe('84');
    expect(await page.locator('#peers li').allTextContents()).toEqual(['node-bonline', 'node-coffline']);
    expect(await page.textContent('#cluster-summary')).toBe('3 nodes · 2 active · 1 offline · ring version 7');
    m.state.operations.get += 5000;
    const read = async (): Promise<number[]> => [await count(page, '#op-get-ok'), await count(page, '#op-get-rate')];
    await expect.poll(async () => (await read())[0], POLL).toBe(5000);
    // A rate is the difference of two polls over the time between them: at least 2 s apart.
    const [, rate] = await read();
    expect(rate).toBeGreaterThan(0);
    expect(rate).toBeLessThanOrEqual(2500);
    expect(await page.locator('#lat-stages tbody tr').count()).toBe(8);
    expect(await page.locator('#lat-ops tbody tr').first().textContent()).toMatch(/^put/);
    expect(await page.textContent('#lat-stages')).toContain('160 µs'); // respond: p50 160 us
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('takes the cluster view from the detail (read scope), with a leaving node\'s migration and the replication queue', async () => {
    const gib = 2 ** 30;
    const m = await mock({
      peerHealth: { 'node-b': true },
      clusterInDetail: { queueDepth: 12, lagSeconds: 1.5 },
      clusterNodes: [
        { node_id: 'mock-node', address: '10.0.0.1:8080', state: 'active', capacity_bytes: 500 * gib, used_bytes: 187 * gib, blob_count: 48213 },
        { node_id: 'node-b', address: '10.0.0.2:8080', state: 'leaving', capacity_bytes: 500 * gib, used_bytes: 100 * gib, blob_count: 900,
          migration: { blobs_left: 420, bytes_left: 3 * gib, bytes_per_second: 200 * 2 ** 20 } },
      ],
    });
    const { page, problems } = await open(browser, m.url);
    await expect.poll(() => page.locator('#nodes .node').count(), POLL).toBe(2);
    expect(await page.textContent('#nodes .migration')).toBe('handing its data over: 420 blobs (3.0 GiB) left at 200 MiB/s');
    expect(await page.textContent('#cluster-summary')).toContain('replication queue 12 (lag 1.5 s)');
    expect(await page.textContent('#nodes')).toContain('leaving');
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
