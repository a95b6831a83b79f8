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
// request made after `watch()` (the app must make none but an explicit #url= and the tables its
// worker fetches on first use: `assets()`, same-origin GETs without a body).
export async function open(browser, hash = '') {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const state = { errors: [], requests: [], watching: false };
  page.on('pageerror', (e) => state.errors.push(e.message));
  const everything = [];
  page.on('request', (r) => {
    everything.push(r);
    if (state.watching) state.requests.push(r);
  });
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  await page.goto(URL_BASE + hash);
  try {
    await page.waitForSelector('body[data-worker="ready"]', { timeout: 60000 });
  } catch (e) {
    // Say why the app did not start (a blocked script, a failed fetch), not only that it did not.
    throw new Error(`the app did not start: ${e.message}\npage errors: ${JSON.stringify(state.errors)}`
      + `\nconsole errors: ${JSON.stringify(consoleErrors)}`);
  }
  state.watch = () => { state.watching = true; };
  const isAsset = (r) => r.url().startsWith(`${URL_BASE}assets/`) && r.method() === 'GET'
    && !r.postData();
  // The page's own code: the views' modules, fetched when first opened (scripts/web_app.sh).
  const isCode = (r) => r.url().startsWith(`${URL_BASE}app/`) && r.method() === 'GET'
    && !r.postData();
  // Requests that leave the page: anything but blob:/data: (downloads and the worker are blobs)
  // and the app's own tables.
  state.network = () => state.requests.filter((r) => !isAsset(r) && !isCode(r)).map((r) => r.url())
    .filter((u) => !u.startsWith('blob:') && !u.startsWith('data:'));
  // The tables fetched since the page opened (file names, in order).
  state.assets = () => everything.filter(isAsset).map((r) => r.url().slice(`${URL_BASE}assets/`.length));
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

// A native MemLens file (memlens convert's output: every chunk, then every call) in the order a
// running agent's pool appends it: each call right after the chunks it uses, the other records
// at the end. Same records, same order within each kind: it imports to the same traces.
// Returns its lines, each ending in a newline.
export function liveOrder(nativeText) {
  const lines = nativeText.trim().split('\n');
  const records = lines.map((l) => JSON.parse(l));
  const out = [];
  let chunks = [], emitted = 0;
  const flush = () => { while (emitted < chunks.length) out.push(chunks[emitted++]); chunks = []; emitted = 0; };
  const pending = [];
  records.forEach((r, i) => {
    if (r.type === 'memlens') out.push(lines[i]);
    else if (r.type === 'trace') { flush(); out.push(...pending.splice(0)); out.push(lines[i]); }
    else if (r.type === 'chunk') chunks.push(lines[i]);
    else if (r.type === 'call') {
      const need = Math.max(...r.input, ...r.output, -1) + 1;
      while (emitted < need) out.push(chunks[emitted++]);
      out.push(lines[i]);
    } else pending.push(lines[i]);
  });
  flush();
  out.push(...pending);
  if (out.length !== lines.length) throw new Error('liveOrder lost records');
  return out.map((l) => l + '\n');
}

// Writes `text` to the OPFS file a test's showOpenFilePicker hands out (appending or replacing).
export const LIVE_FILE = 'live.memlens.jsonl';
export const LIVE_PICKER = `window.showOpenFilePicker = async () => {
  const root = await navigator.storage.getDirectory();
  return [await root.getFileHandle('live.memlens.jsonl', { create: true })];
};`;
export async function writeOpfs(page, text, append) {
  await page.evaluate(async ({ text, append, name }) => {
    const root = await navigator.storage.getDirectory();
    const handle = await root.getFileHandle(name, { create: true });
    const size = (await handle.getFile()).size;
    const w = await handle.createWritable({ keepExistingData: append });
    if (append) await w.seek(size);
    await w.write(text);
    await w.close();
  }, { text, append, name: LIVE_FILE });
}
