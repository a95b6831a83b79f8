// Shared by the browser tests: headless Chromium (Debian's, driven by playwright-core from
// tools/node_modules), the served app's URL, the CLI for reference figures, artifacts.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(ROOT, 'tools/package.json'));
const { chromium } = require('playwright-core');

export const URL_BASE = process.env.MEMLENS_WEB_URL || 'http://127.0.0.1:8080/';
export const MEMLENS = process.env.MEMLENS_BIN || path.join(ROOT, 'target/debug/memlens');
export const ARTIFACTS = path.join(ROOT, 'target/web-artifacts');
export const TAU = path.resolve(ROOT, '../shared/data/traces/tau-bench-gpt-4o-airline.json');
export const SAMPLE = path.join(ROOT, 'web/sample/support-agent.json');
export const FIXTURES = path.join(ROOT, 'tests/fixtures/web');
mkdirSync(ARTIFACTS, { recursive: true });

// Flags that work headless as root here (see ../shared/toolchain/NOTES.md).
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export async function launch() {
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ARGS });
}

// A page on the app, with the worker ready. Records page errors; `requests` collects every
// request made after `watch()` (the app must make none but an explicit #url=).
export async function open(browser, hash = '') {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const state = { errors: [], requests: [], watching: false };
  page.on('pageerror', (e) => state.errors.push(e.message));
  page.on('request', (r) => { if (state.watching) state.requests.push(r.url()); });
  await page.goto(URL_BASE + hash);
  await page.waitForSelector('body[data-worker="ready"]', { timeout: 60000 });
  state.watch = () => { state.watching = true; };
  // Requests that leave the page: anything but blob:/data: (downloads and the worker are blobs).
  state.network = () => state.requests.filter((u) => !u.startsWith('blob:') && !u.startsWith('data:'));
  return { page, state };
}

export function cli(...args) {
  return JSON.parse(execFileSync(MEMLENS, args, { maxBuffer: 1 << 30 }).toString());
}

// The app's number formatting (thousands separators).
export const int = (n) => Math.round(n).toLocaleString('en-US');

export async function shot(page, name) {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
}
