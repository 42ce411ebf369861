/** Headless Debian Chromium for the web UI tests (playwright-core drives it; nothing is downloaded). */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM) console.warn(`test/ui: ${CHROMIUM} is missing; the web UI tests are skipped (apt-get install chromium)`);

export const POLL = { timeout: 10_000, interval: 100 };

export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export interface Watched {
  page: Page;
  /** Console errors, page errors and requests to another origin, as text. */
  problems: string[];
}

/** Opens `url` in a fresh context and records everything that should not happen. */
export async function open(browser: Browser, url: string, viewport = { width: 1280, height: 800 }): Promise<Watched> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems: string[] = [];
  const origin = new URL(url).origin;
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => { if (new URL(r.url()).origin !== origin) problems.push(`request to another origin: ${r.url()}`); });
  await page.goto(url);
  return { page, problems };
}

