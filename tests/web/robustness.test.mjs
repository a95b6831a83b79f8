// Bad input: a malformed file shows a readable error and the app stays usable; trace content
// with markup renders inert, as text; #url= is the only fetch.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync, writeFileSync, truncateSync, rmSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import { launch, open, shot, FIXTURES, URL_BASE } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('a malformed file shows an error and the app stays usable', async () => {
  const { page, state } = await open(browser);
  state.watch();
  await page.setInputFiles('#file-input', path.join(FIXTURES, 'malformed.json'));
  const error = page.locator('#error');
  await error.waitFor();
  const text = await error.textContent();
  assert.match(text, /Could not read this file/);
  assert.match(text, /malformed\.json/);
  assert.match(text, /invalid JSON/);
  await shot(page, 'malformed-error');
  // Still usable: the sample loads.
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  assert.deepEqual(state.network(), []);
  assert.deepEqual(state.errors, []);
  await page.close();
});

test('a file too large for a tab is refused with a message, not a crashed tab', async () => {
  // A sparse 1.2 GB file: Chromium takes it by path, so nothing is read unless the app reads it.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'memlens-big-'));
  const big = path.join(dir, 'huge-session.jsonl');
  writeFileSync(big, '');
  truncateSync(big, Math.round(1.2 * 1024 ** 3));
  try {
    const { page, state } = await open(browser);
    state.watch();
    await page.setInputFiles('#file-input', big);
    const error = page.locator('#error');
    await error.waitFor();
    const text = await error.textContent();
    assert.match(text, /huge-session\.jsonl is 1\.3 GB/);
    assert.match(text, /up to 1\.1 GB/);
    assert.match(text, /memlens inspect FILE/);
    await shot(page, 'too-large-error');
    // Nothing was imported, and the app is still usable.
    assert.equal(await page.locator('#k-calls').count(), 0);
    await page.click('#load-sample');
    await page.waitForSelector('#k-calls');
    assert.deepEqual(state.network(), []);
    assert.deepEqual(state.errors, []);
    await page.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('markup in trace content is inert text', async () => {
  const { page, state } = await open(browser);
  state.watch();
  await page.setInputFiles('#file-input', path.join(FIXTURES, 'xss.json'));
  await page.waitForSelector('#k-calls');
  await page.click('#tab-chunks');
  // Open every chunk in turn: the detail panel shows the content as text. The view's module
  // loads on first use: wait for its rows before counting them (counted at once, a loaded
  // machine saw none).
  const rows = page.locator('#chunk-rows .row');
  await rows.first().waitFor();
  const n = await rows.count();
  assert.equal(n, 5);
  let seen = '';
  for (let i = 0; i < n; i++) {
    await rows.nth(i).click();
    seen += await page.textContent('#chunk-content');
  }
  assert.match(seen, /<script>window.__xss = 'script';<\/script>/);
  assert.match(seen, /<img src=x onerror=/);
  await shot(page, 'xss-inert');
  for (const v of ['overview', 'heatmap', 'cost', 'graph', 'simulator', 'labels']) {
    await page.click(`#tab-${v}`);
  }
  await page.waitForTimeout(300);
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'no injected code ran');
  assert.equal(await page.locator('img').count(), 0, 'no <img> element was created');
  assert.equal(await page.locator('main script').count(), 0);
  assert.deepEqual(state.network(), []);
  await page.close();
});

test('#url= loads from a URL, the only request the app makes', async () => {
  const target = URL_BASE + 'from-url/trace.json';
  const browserPage = await browser.newPage();
  await browserPage.route(target, (route) =>
    route.fulfill({ status: 200, contentType: 'application/json', body: readFileSync(path.join(FIXTURES, 'xss.json')) }));
  const requests = [];
  browserPage.on('request', (r) => requests.push(r.url()));
  await browserPage.goto(URL_BASE + '#url=' + encodeURIComponent(target));
  await browserPage.waitForSelector('#k-calls', { timeout: 60000 });
  assert.ok(requests.includes(target));
  assert.match(await browserPage.textContent('#file-badge'), /trace\.json/);
  // A missing URL is a readable error.
  await browserPage.goto(URL_BASE + '#url=' + encodeURIComponent(URL_BASE + 'no-such-file.json'));
  await browserPage.reload();
  await browserPage.locator('#error').waitFor({ timeout: 60000 });
  assert.match(await browserPage.textContent('#error'), /HTTP 404/);
  await browserPage.close();
});

test('a worker that stops is restarted once, and the stopped one is no longer listened to', async () => {
  const { page } = await open(browser);
  // Keep every Worker the page makes, to make one fail.
  await page.addInitScript(() => {
    const Real = window.Worker;
    window.__workers = [];
    window.Worker = class extends Real {
      constructor(...args) { super(...args); window.__workers.push(this); }
    };
  });
  await page.reload();
  await page.waitForSelector('body[data-worker="ready"]');
  assert.equal(await page.evaluate(() => window.__workers.length), 1);
  await page.evaluate(() => window.__workers[0].dispatchEvent(new ErrorEvent('error', { message: 'simulated crash' })));
  await page.waitForSelector('#error');
  assert.match(await page.textContent('#error'), /The worker stopped \(simulated crash\)\. It is restarted/);
  await page.waitForFunction(() => window.__workers.length === 2);
  await page.waitForSelector('body[data-worker="ready"]');
  // The first worker's listeners went with it: another error there restarts nothing.
  await page.evaluate(() => window.__workers[0].dispatchEvent(new ErrorEvent('error', { message: 'again' })));
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  assert.equal(await page.evaluate(() => window.__workers.length), 2);
  await page.close();
});

test('a tokenizer vocabulary that cannot be fetched: estimated counts, said so, the app usable', async () => {
  const { page, state } = await open(browser);
  await page.route('**/assets/o200k_base.tiktoken', (route) => route.abort());
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  const warnings = await page.textContent('#warnings');
  assert.match(warnings, /o200k_base\.tiktoken could not be loaded .*token counts are estimates/);
  assert.match(await page.textContent('h2'), /\(estimated\)/);
  assert.deepEqual(state.errors, []);
  await page.close();
});
