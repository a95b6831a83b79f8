// The real tau-bench file (200 traces) through the file input: trace count, one trace's
// numbers against `memlens inspect --json`, sorting and filtering the chunk table, opening a
// chunk, a replay against `memlens simulate --json`, the comparison, and no network request.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launch, open, cli, int, shot, TAU } from './helpers.mjs';

const INDEX = 7;
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('tau-bench: picker, numbers, table, detail, simulation', { skip: !existsSync(TAU) && 'no ../shared data' }, async () => {
  const inspect = cli('inspect', TAU, '--json', '--chunks', '--top', '0');
  const ref = inspect.traces[INDEX];
  const { page, state } = await open(browser);
  state.watch();

  await page.setInputFiles('#file-input', TAU);
  await page.waitForSelector('#picker', { timeout: 120000 });
  assert.equal(await page.textContent('#trace-count'), '200');
  assert.equal(await page.locator('#picker tr.pick').count(), 200);
  await shot(page, 'tau-picker');
  await page.fill('#picker-search', ref.id);
  await page.locator('#picker tr.pick td:first-child', { hasText: new RegExp(`^${ref.id}$`) }).click();
  await page.waitForSelector('#k-calls', { timeout: 60000 });
  assert.equal(await page.textContent('#k-calls'), int(ref.calls));
  assert.equal(await page.textContent('#k-total'), int(ref.tokens.total));
  assert.equal(await page.textContent('#k-input'), int(ref.counted_input_tokens));
  assert.match(page.url(), new RegExp(`trace=${INDEX}`));
  await shot(page, 'tau-overview');

  // Chunks: sort by tokens (descending first), filter, search, open one.
  await page.click('#tab-chunks');
  const chunks = ref.chunk_list;
  assert.equal(await page.textContent('#row-count'), `${chunks.length} of ${chunks.length} chunks`);
  await page.click('#sort-tokens');
  const firstTokens = await page.locator('#chunk-rows .row').first().locator('span').nth(3).textContent();
  assert.equal(firstTokens, int(Math.max(...chunks.map((c) => c.tokens))));
  await page.click('#sort-tokens');
  const lastFirst = await page.locator('#chunk-rows .row').first().locator('span').nth(3).textContent();
  assert.equal(lastFirst, int(Math.min(...chunks.map((c) => c.tokens))));
  await page.selectOption('#filter-category', 'tool_result');
  const results = chunks.filter((c) => c.category === 'tool_result').length;
  assert.equal(await page.textContent('#row-count'), `${results} of ${chunks.length} chunks`);
  const cats = await page.locator('#chunk-rows .row span:nth-child(2)').allTextContents();
  assert.ok(cats.length > 0 && cats.every((c) => c === 'tool_result'));
  await page.selectOption('#filter-category', '');
  // Text search: a reservation id that occurs in this trace.
  const needle = 'airline';
  const matching = chunks.filter((c) => c.content.toLowerCase().includes(needle) || c.key.includes(needle)).length;
  await page.fill('#filter-text', needle);
  assert.equal(await page.textContent('#row-count'), `${matching} of ${chunks.length} chunks`);
  await page.fill('#filter-text', '');
  // Open the largest chunk: its content is the CLI's, as text.
  await page.click('#sort-tokens');
  await page.click('#sort-tokens');
  const row = page.locator('#chunk-rows .row').first();
  const key = (await row.locator('span').first().textContent()).trim();
  await row.click();
  await page.waitForSelector('#chunk-detail');
  const content = chunks.find((c) => c.key === key).content;
  assert.equal(await page.textContent('#chunk-content'), content);
  assert.match(await page.textContent('#chunk-detail'), /Value factors/);
  await shot(page, 'tau-chunks-detail');
  // Label it: persisted in local storage.
  await page.click('#label-important');
  for (const v of ['heatmap', 'cost', 'graph']) {
    await page.click(`#tab-${v}`);
    await shot(page, `tau-${v}`);
  }

  // Simulation against the CLI. The label goes into the web app's replays, so the CLI replays
  // the same policy with that label (a policy file carrying it).
  const budget = 2000;
  const labelled = path.join(os.tmpdir(), `memlens-window-labelled-${process.pid}.json`);
  writeFileSync(labelled, JSON.stringify({ ...cli('policies', 'window'), labels: { [key]: 'important' } }));
  const sim = cli('simulate', TAU, '--policy', labelled, '--budget', String(budget), '--json');
  const want = sim.traces[INDEX].totals;
  await page.click('#tab-simulator');
  await page.selectOption('#policy-select', 'window');
  await page.fill('#budget', String(budget));
  await page.press('#budget', 'Tab');
  await page.click('#run-sim');
  await page.waitForSelector('#sim-input', { timeout: 60000 });
  assert.equal(await page.textContent('#sim-input'), int(want.input_tokens));
  assert.equal(await page.textContent('#sim-saved'), int(want.saved_tokens));
  assert.equal(await page.textContent('#sim-misses'), String(want.misses));
  assert.match(page.url(), /policy=window&budget=2000/);
  // What it drops at the last call.
  await page.click('#run-diff');
  await page.waitForSelector('#diff-table');
  assert.ok(await page.locator('#diff-table tr.fate-dropped').count() > 0);
  // Budget sweep: one row per budget; the 2,000 row is the replay above (the CLI's figures).
  await page.click('#run-sweep');
  await page.waitForSelector('#sweep-chart', { timeout: 120000 });
  const sweepRows = page.locator('#sweep-table tbody tr');
  assert.equal(await sweepRows.count(), 6);
  const at2000 = await sweepRows.nth(2).locator('td').allTextContents();
  assert.deepEqual([at2000[1], at2000[2], at2000[6]], [int(budget), int(want.input_tokens), String(want.misses)]);
  // Every built-in policy side by side.
  await page.click('#run-compare');
  await page.waitForSelector('#compare-table', { timeout: 120000 });
  assert.equal(await page.locator('#compare-table tbody tr').count(), 14);
  await shot(page, 'tau-simulator');
  // Export the policy: a download, not a request.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-policy')]);
  assert.equal(download.suggestedFilename(), 'window.policy.json');
  // It carries the label, and the budget.
  const exported = JSON.parse(readFileSync(await download.path(), 'utf8'));
  assert.deepEqual(exported.labels, { [key]: 'important' });
  assert.equal(exported.budget, budget);

  // Labels view lists the label; fitting with one class reports it.
  await page.click('#tab-labels');
  assert.match(await page.textContent('#label-count'), /^1 labelled/);
  await shot(page, 'tau-labels');

  // Count and price as gpt-4o (the file names no model): re-imported, priced like the CLI's --model.
  const priced = cli('inspect', TAU, '--json', '--top', '0', '--model', 'gpt-4o').traces[INDEX];
  await page.fill('#model', 'gpt-4o');
  await page.press('#model', 'Tab');
  await page.click('#tab-overview');
  await page.waitForFunction(() => document.querySelector('#k-cost')?.textContent.startsWith('$'), null, { timeout: 120000 });
  const usd = (v) => (v < 1 ? `$${v.toFixed(4)}` : `$${v.toFixed(2)}`);
  assert.equal(await page.textContent('#k-cost'), usd(priced.cost_usd));
  assert.equal(await page.textContent('#k-input'), int(priced.counted_input_tokens));

  assert.deepEqual(state.network(), [], 'no request after load');
  assert.deepEqual(state.errors, []);
  await page.close();
});
