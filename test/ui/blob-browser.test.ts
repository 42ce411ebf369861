/**
 * The web UI's blob browser and the operations panel's new columns, in headless Chromium against
 * real nodes: list with prefix and paging, upload with policy and labels, metadata, download,
 * delete; bearer auth with the token in sessionStorage only; in the separate layout, the page on
 * each listener runs what that listener serves and links to the other.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKENS } from '../auth/helpers.js';
import { type AuthNode, startAuthNode } from '../auth/node.js';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { metricsPortOf } from '../helpers/metrics.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';
import { HAVE_CHROMIUM, POLL, launch, open } from './browser.js';

let browser: Browser;
beforeAll(async () => {
  if (HAVE_CHROMIUM) browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

const idsOnPage = async (page: Page): Promise<string[]> => (await page.locator('#blob-rows button').allTextContents());

async function store(url: string, bytes: Buffer): Promise<string> {
  const res = await putRaw(url, bytes, { 'x-blobstore-policy': '1' });
  expect(res.status).toBeLessThan(300);
  return ((await res.json()) as { id: string }).id;
}

describe.skipIf(!HAVE_CHROMIUM)('blob browser on a node with the `same` layout (both views in one page)', () => {
  let node: NodeProcess;
  const ids: string[] = [];

  beforeAll(async () => {
    node = await startNode({ args: ['--metrics-addr', 'same'] });
    for (let i = 0; i < 7; i++) ids.push(await store(node.url, patternBytes(100 + i, 500 + i)));
    ids.sort();
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('lists the blobs a page at a time, and filters by prefix', async () => {
    const { page, problems } = await open(browser, `${node.url}/#blobs`);
    await expect.poll(() => idsOnPage(page), POLL).toHaveLength(7);
    await page.fill('#blob-limit', '3');
    await page.click('#blob-search button[type=submit]');
    await expect.poll(() => idsOnPage(page), POLL).toStrictEqual(ids.slice(0, 3));
    expect(await page.textContent('#blob-page')).toBe('page 1 · 3 blobs · more');
    await page.click('#blob-next');
    await expect.poll(() => idsOnPage(page), POLL).toStrictEqual(ids.slice(3, 6));
    await page.click('#blob-next');
    await expect.poll(() => idsOnPage(page), POLL).toStrictEqual(ids.slice(6));
    expect(await page.isDisabled('#blob-next')).toBe(true);
    await page.click('#blob-prev');
    await expect.poll(() => idsOnPage(page), POLL).toStrictEqual(ids.slice(3, 6));
    await page.fill('#blob-limit', '50');
    await page.fill('#blob-prefix', ids[4]!.slice(0, 6));
    await page.click('#blob-search button[type=submit]');
    await expect.poll(() => idsOnPage(page), POLL).toStrictEqual([ids[4]]);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('uploads a file as a raw body with its policy and labels, then shows its metadata', async () => {
    const { page, problems } = await open(browser, `${node.url}/#blobs`);
    const bytes = patternBytes(70_000, 901);
    await page.setInputFiles('#upload-file', { name: 'photo.bin', mimeType: 'application/octet-stream', buffer: bytes });
    await page.selectOption('#upload-policy', 'REPLICATION_POLICY_REPLICA2');
    await page.fill('#upload-labels', 'team=ingest\nkind=photo, large');
    await page.click('#upload button[type=submit]');
    await expect.poll(() => page.textContent('#blob-status'), POLL).toMatch(/^stored photo\.bin as [0-9a-f]{32}$/);
    const id = (await page.textContent('#blob-status'))!.slice(-32);
    await expect.poll(() => page.textContent('#blob-meta-id'), POLL).toBe(id);
    expect(await page.textContent('#blob-meta-size')).toBe('68.4 KiB (70,000 bytes)');
    expect(await page.textContent('#blob-meta-policy')).toBe('REPLICA2');
    expect(await page.textContent('#blob-meta-labels')).toBe('kind=photo, large, team=ingest');
    const head = await fetch(`${node.url}/v1/blobs/${id}`, { method: 'HEAD' });
    expect(head.headers.get('x-blobstore-policy')).toBe('2');
    expect(Buffer.from(await (await fetch(`${node.url}/v1/blobs/${id}`)).arrayBuffer()).equals(bytes)).toBe(true);
    // The same bytes again: already stored.
    await page.setInputFiles('#upload-file', { name: 'again.bin', mimeType: 'application/octet-stream', buffer: bytes });
    await page.click('#upload button[type=submit]');
    await expect.poll(() => page.textContent('#blob-status'), POLL).toBe(`already stored: again.bin as ${id}`);
    const stat = (await (await fetch(`${node.url}/v1/blobs/${id}/stat`)).json()) as { meta: { labels: Record<string, string> } };
    expect(stat.meta.labels).toEqual({ team: 'ingest', kind: 'photo, large' });
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('says a file of 10^9 bytes or more goes by the command line, and sends nothing', async () => {
    const { page, problems } = await open(browser, `${node.url}/#blobs`);
    const dir = mkdtempSync(join(tmpdir(), 'blobstore-ui-big-'));
    const big = join(dir, 'big.bin');
    closeSync(openSync(big, 'w'));
    truncateSync(big, 1e9); // sparse: no disk used
    try {
      const before = (await (await fetch(`${node.url}/v1/blobs?limit=1000`)).json()) as { ids: string[] };
      await page.setInputFiles('#upload-file', big);
      await page.click('#upload button[type=submit]');
      await expect.poll(() => page.textContent('#blob-status'), POLL).toContain('stored with the command line (blobstore put)');
      const after = (await (await fetch(`${node.url}/v1/blobs?limit=1000`)).json()) as { ids: string[] };
      expect(after.ids).toEqual(before.ids);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('downloads a blob byte for byte, and deletes one after a confirmation', async () => {
    const { page, problems } = await open(browser, `${node.url}/#blobs`);
    await expect.poll(() => idsOnPage(page), POLL).toContain(ids[2]);
    await page.locator('#blob-rows button', { hasText: ids[2]! }).click();
    await expect.poll(() => page.textContent('#blob-meta-id'), POLL).toBe(ids[2]);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#blob-download')]);
    expect(download.suggestedFilename()).toBe(ids[2]);
    const saved = readFileSync((await download.path())!);
    expect(saved.equals(Buffer.from(await (await fetch(`${node.url}/v1/blobs/${ids[2]}`)).arrayBuffer()))).toBe(true);

    page.once('dialog', (d) => void d.dismiss());
    await page.click('#blob-delete');
    expect((await fetch(`${node.url}/v1/blobs/${ids[2]}`, { method: 'HEAD' })).status).toBe(200);
    page.once('dialog', (d) => void d.accept());
    await page.click('#blob-delete');
    await expect.poll(() => page.textContent('#blob-status'), POLL).toBe(`deleted ${ids[2]}`);
    // The list is drawn again after the status (on a busy machine, a moment later).
    await expect.poll(() => idsOnPage(page), POLL).not.toContain(ids[2]);
    expect((await fetch(`${node.url}/v1/blobs/${ids[2]}`, { method: 'HEAD' })).status).toBe(404);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('the operations panel counts successes and failures apart; percentiles from few samples are marked', async () => {
    const { page, problems } = await open(browser, `${node.url}/`);
    await expect.poll(() => page.textContent('#op-get-failed'), POLL).toMatch(/^\d+$/);
    const ok = Number(await page.textContent('#op-get-ok'));
    const failed = Number(await page.textContent('#op-get-failed'));
    expect((await fetch(`${node.url}/v1/blobs/${'0'.repeat(32)}`)).status).toBe(404);
    await (await fetch(`${node.url}/v1/blobs/${ids[0]}`)).arrayBuffer();
    await expect.poll(() => page.textContent('#op-get-failed'), POLL).toBe(String(failed + 1));
    expect(await page.textContent('#op-get-ok')).toBe(String(ok + 1));
    // A handful of gets: p99 (needs 100) is marked, with the count in its title and a footnote.
    const p99 = page.locator('#lat-ops tbody tr', { hasText: /^get/ }).locator('td').nth(3);
    expect(await p99.getAttribute('class')).toBe('few');
    expect(await p99.textContent()).toMatch(/\*$/);
    expect(await p99.getAttribute('title')).toMatch(/^p99 from only \d+ samples?: a rough estimate$/);
    expect(await page.textContent('#lat-ops .footnote')).toContain('few samples');
    expect(problems).toEqual([]);
    await page.context().close();
  });
});

describe.skipIf(!HAVE_CHROMIUM)('blob browser with bearer auth', () => {
  let auth: AuthNode;
  beforeAll(async () => {
    auth = await startAuthNode({ args: ['--metrics-addr', 'same'] });
    await store(auth.node.url, patternBytes(10, 1)).catch(() => undefined);
  });
  afterAll(async () => {
    await auth?.stop();
  });

  it('asks for a token, keeps it in sessionStorage only, and says when its scope is not enough', async () => {
    const { page, problems } = await open(browser, `${auth.node.url}/#blobs`);
    await expect.poll(() => page.isVisible('#token'), POLL).toBe(true);
    expect(await page.textContent('#blob-status')).toContain('needs a bearer token (401)');
    await page.getByLabel('This node needs a bearer token').fill(TOKENS.read);
    await page.getByRole('button', { name: 'Use token' }).click();
    await expect.poll(() => page.textContent('#blob-page'), POLL).toMatch(/^page 1/);
    expect(await page.isVisible('#token')).toBe(false);
    expect(await page.textContent('#blob-status')).not.toContain('needs a bearer token');
    expect(await page.evaluate('sessionStorage.getItem("blobstore.token")')).toBe(TOKENS.read);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect((await page.context().cookies()).length).toBe(0);
    // A read token may list but not store.
    await page.setInputFiles('#upload-file', { name: 'x.bin', mimeType: 'application/octet-stream', buffer: Buffer.from('denied') });
    await page.click('#upload button[type=submit]');
    await expect.poll(() => page.textContent('#blob-status'), POLL).toContain('token lacks the write scope');
    // The form is open again to use another token: with an admin token it may.
    await expect.poll(() => page.isVisible('#token'), POLL).toBe(true);
    await page.getByLabel('This node needs a bearer token').fill(TOKENS.admin);
    await page.getByRole('button', { name: 'Use token' }).click();
    expect(await page.evaluate('sessionStorage.getItem("blobstore.token")')).toBe(TOKENS.admin);
    await page.click('#upload button[type=submit]');
    await expect.poll(() => page.textContent('#blob-status'), POLL).toMatch(/^stored x\.bin as [0-9a-f]{32}$/);
    expect(problems.filter((p) => !/status of 40[13]/.test(p))).toEqual([]);
    await page.context().close();
  });
});

describe.skipIf(!HAVE_CHROMIUM)('blob browser on a variant A node (every store answers 200)', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode({ args: ['--metrics-addr', 'same', '--api-variant', 'a'] });
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('says a new file is stored, not already stored', async () => {
    const { page, problems } = await open(browser, `${node.url}/#blobs`);
    await page.setInputFiles('#upload-file', { name: 'new.bin', mimeType: 'application/octet-stream', buffer: patternBytes(5000, 77) });
    await page.click('#upload button[type=submit]');
    await expect.poll(() => page.textContent('#blob-status'), POLL).toMatch(/^stored new\.bin as [0-9a-f]{32}$/);
    expect(problems).toEqual([]);
    await page.context().close();
  });
});

describe.skipIf(!HAVE_CHROMIUM)('separate layout: each listener\'s page runs what it serves and links to the other', () => {
  let node: NodeProcess;
  let metricsUrl: string;
  beforeAll(async () => {
    node = await startNode({ args: ['--metrics-addr', '127.0.0.1:0'] });
    await waitFor(() => metricsPortOf(node) !== undefined, { what: 'the metrics listener\'s port in the node\'s output', timeoutMs: 10_000 });
    metricsUrl = `http://127.0.0.1:${metricsPortOf(node)}`;
    await store(node.url, patternBytes(50, 77));
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('the metrics listener\'s page monitors, and its Blobs view links to /ui/ on the API port', async () => {
    const { page, problems } = await open(browser, `${metricsUrl}/`);
    await expect.poll(() => page.textContent('#status'), POLL).toBe('live');
    await page.click('#tab-blobs');
    expect(await page.isVisible('#blobs-away')).toBe(true);
    expect(await page.getAttribute('#blobs-away-link a', 'href')).toBe(`${node.url}/ui/#blobs`);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('the API port\'s /ui/ opens on the blob browser, and its Monitoring view links to the metrics listener', async () => {
    const { page, problems } = await open(browser, `${node.url}/ui/`);
    await expect.poll(() => idsOnPage(page), POLL).toHaveLength(1);
    await page.click('#tab-monitor');
    expect(await page.isVisible('#monitor-away')).toBe(true);
    expect(await page.getAttribute('#monitor-away-link a', 'href')).toBe(`${metricsUrl}/`);
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
