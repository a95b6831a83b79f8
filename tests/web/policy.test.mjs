// Editing a policy: TOML in the text box, then the form; each replay matches `memlens simulate`
// on the same policy, and the exported file is one the CLI reads and replays identically.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { launch, open, cli, int, shot, SAMPLE, MEMLENS } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const TOML = `name = "edited"
strategy = "value"

[protect]
recent_messages = 1

[compress]
strip_markup = true
clear_tool_results_after = 2
`;

async function totals(page) {
  await page.click('#run-sim');
  await page.waitForFunction(() => !document.querySelector('#busy'));
  await page.waitForSelector('#sim-input');
  return [await page.textContent('#sim-input'), await page.textContent('#sim-saved'), await page.textContent('#sim-misses')];
}
// The sample in the simulator at `budget`, with `policyText` in the policy box; requests watched.
async function simulatorWith(budget, policyText) {
  const { page, state } = await open(browser);
  state.watch();
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  await page.click('#tab-simulator');
  await page.fill('#budget', String(budget));
  await page.press('#budget', 'Tab');
  await page.click('.sim-form details summary');
  await page.fill('#policy-text', policyText);
  return { page, state };
}
const want = (file, budget) => {
  const t = cli('simulate', SAMPLE, '--policy', file, '--budget', String(budget), '--json').traces[0].totals;
  return [int(t.input_tokens), int(t.saved_tokens), String(t.misses)];
};

test('TOML edit, form edit and export replay like the CLI', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'memlens-policy-'));
  const budget = 600;
  // TOML in the text box.
  const { page, state } = await simulatorWith(budget, TOML);
  const tomlFile = path.join(dir, 'edited.toml');
  writeFileSync(tomlFile, TOML);
  assert.deepEqual(await totals(page), want(tomlFile, budget));
  // The form reads the text.
  assert.equal(await page.inputValue('#form-clear'), '2');
  assert.equal(await page.inputValue('#form-recent'), '1');
  assert.equal(await page.isChecked('#form-strip'), true);
  assert.equal(await page.inputValue('#policy-select'), 'custom');

  // The form writes it: keep 3 newest messages, dedupe on, JSON results minified or TOON.
  await page.fill('#form-recent', '3');
  await page.press('#form-recent', 'Tab');
  await page.check('#form-dedupe');
  await page.check('#form-minify');
  await page.check('#form-toon');
  // The thresholds: a value threshold and a cleanup at 90% of the budget down to 60%.
  await page.fill('#form-threshold', '0.3');
  await page.press('#form-threshold', 'Tab');
  await page.selectOption('#form-threshold-runs', 'agent');
  await page.fill('#form-cleanup-trigger', '0.9');
  await page.press('#form-cleanup-trigger', 'Tab');
  await page.fill('#form-cleanup-target', '0.6');
  await page.press('#form-cleanup-target', 'Tab');
  // Quotas by value, an age exemption, and value weights from a preset by key.
  await page.check('#form-quota-value');
  // The assistant's echoed replies evicted, in agent runs.
  await page.check('#form-echoed');
  await page.fill('#form-age-exempt', '0.7');
  await page.press('#form-age-exempt', 'Tab');
  await page.selectOption('#form-preset', 'coding-agent');
  const text = await page.inputValue('#policy-text');
  const edited = JSON.parse(text);
  assert.equal(edited.value_threshold, 0.3);
  assert.equal(edited.value_threshold_runs, 'agent');
  assert.deepEqual(edited.cleanup, { trigger: 0.9, target: 0.6 });
  assert.equal(edited.quota_order, 'value');
  assert.equal(edited.evict_echoed_replies, 'agent');
  assert.equal(edited.age_exempt_value, 0.7);
  assert.equal(edited.value_preset, 'coding-agent');
  assert.equal(edited.protect.recent_messages, 3);
  assert.equal(edited.compress.dedupe, true);
  assert.equal(edited.compress.minify_json, true);
  assert.equal(edited.compress.toon_json, true);
  assert.equal(edited.compress.clear_tool_results_after, 2);
  const shown = await totals(page);
  await shot(page, 'policy-form');

  // Export: the file the CLI reads gives the same replay.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-policy')]);
  const exported = path.join(dir, 'exported.json');
  await download.saveAs(exported);
  assert.deepEqual(shown, want(exported, budget));
  // A broken text is reported, not run.
  await page.fill('#policy-text', 'strategy = ');
  await page.click('#run-sim');
  await page.waitForSelector('#policy-error');
  assert.match(await page.textContent('#policy-error'), /toml/i);
  // The worker reads TOML for the page: its errors name the field, not a position in the JSON
  // it makes of the table, and a number that is not finite is refused with its path.
  for (const [text, want] of [
    ['strategy = "value"\nvalue_threshold = inf\n', /invalid policy \(toml\): value_threshold is not a finite number/],
    ['strategy = "value"\n[compress]\nstrip_markup = true\nno_such_field = 1\n', /invalid policy \(toml\): unknown field `no_such_field`/],
  ]) {
    await page.fill('#policy-text', text);
    await page.click('#run-sim');
    await page.waitForFunction((w) => new RegExp(w).test(document.querySelector('#policy-error')?.textContent ?? ''), want.source);
    assert.doesNotMatch(await page.textContent('#policy-error'), /at line \d+ column/);
  }

  assert.deepEqual(state.network(), []);
  assert.deepEqual(state.errors, []);
  await page.close();
});

test("a policy's summaries are shown as compactions, as `memlens simulate --summaries` reports them", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'memlens-summaries-'));
  const text = 'name = "window-summary"\nstrategy = "window"\n\n[compress.summary]\n';
  const file = path.join(dir, 'window-summary.toml');
  writeFileSync(file, text);
  const budget = 600;
  const want = cli('simulate', SAMPLE, '--policy', file, '--budget', String(budget), '--summaries', '--json').traces[0].summaries;
  assert.ok(want.length >= 2, 'the window summarizes what it evicts on the sample');
  const { page, state } = await simulatorWith(budget, text);
  await totals(page);
  await page.waitForSelector('#sim-summaries');
  const shown = await page.$$eval('#sim-summaries details.compaction', (ds) => ds.map((d) => ({
    id: d.id, replaced: Number(d.dataset.replaced), kept: Number(d.dataset.kept), lost: Number(d.dataset.lost),
    misses: Number(d.dataset.misses), head: d.querySelector('summary').textContent,
  })));
  assert.equal(shown.length, want.length);
  for (const [i, s] of want.entries()) {
    assert.deepEqual(
      { id: shown[i].id, replaced: shown[i].replaced, kept: shown[i].kept, lost: shown[i].lost, misses: shown[i].misses },
      { id: `sim-summary-${i + 1}`, replaced: s.replaced_chunks, kept: s.kept.length, lost: s.lost.length, misses: s.later_miss_count },
    );
    assert.ok(shown[i].head.includes(`before call ${s.first_call} (policy)`), shown[i].head);
    const lost = await page.$$eval(`#sim-summary-${i + 1}-lost li code`, (cs) => cs.map((c) => c.textContent));
    assert.deepEqual(lost, s.lost.map((x) => x.text));
  }
  // A marker on the per-call chart for each summary.
  assert.equal(await page.locator('#sim-chart line.sim-summary-marker').count(), want.length);
  await page.locator('#sim-summaries').scrollIntoViewIfNeeded();
  await shot(page, 'sim-summaries');
  await page.click('#theme');
  await shot(page, 'sim-summaries-dark');
  assert.deepEqual(state.network(), []);
  assert.deepEqual(state.errors, []);
  await page.close();
});

test('the frontier: every policy at 2,000 / 4,000 / 8,000 and the chosen budget, marked as `memlens compare --frontier` marks it', async () => {
  const { page, state } = await open(browser);
  state.watch();
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  await page.click('#tab-simulator');
  await page.selectOption('#policy-select', 'value');
  await page.fill('#budget', '600');
  await page.press('#budget', 'Tab');
  await page.click('#run-frontier');
  await page.waitForSelector('#frontier-table', { timeout: 120000 });
  await page.waitForSelector('#frontier-chart');
  const pct = (x) => `${(x * 100).toFixed(1)}%`;
  const rows = cli('compare', SAMPLE, '--frontier', '--budgets', '600,2000,4000,8000', '--json').rows;
  const want = rows.map(({ policy, budget, totals: t, frontier }) => [policy, int(budget), pct(t.saved_tokens / Math.max(t.full_input_tokens, 1)),
    pct(t.calls_with_misses / Math.max(t.calls, 1)), String(t.misses), frontier ? 'yes' : ''].join(' | ')).sort();
  const got = [];
  for (const tr of await page.locator('#frontier-table tbody tr').all()) got.push((await tr.locator('td').allTextContents()).join(' | '));
  assert.deepEqual([...got].sort(), want);
  // Best savings first, as the CLI prints it; every frontier row is a filled, named point.
  const saved = got.map((r) => parseFloat(r.split(' | ')[2]));
  assert.deepEqual(saved, [...saved].sort((a, b) => b - a));
  const onFrontier = rows.filter((r) => r.frontier).length;
  assert.ok(onFrontier > 0 && onFrontier < rows.length, `${onFrontier} of ${rows.length} rows on the frontier`);
  assert.equal(await page.locator('#frontier-chart circle.point.on').count(), onFrontier);
  assert.equal(await page.locator('#frontier-chart circle.point').count(), rows.length);
  await shot(page, 'simulator-frontier');
  assert.deepEqual(state.network(), [], 'no request after load');
  assert.deepEqual(state.errors, []);
  await page.close();
});

test("the Labels view suggests hindsight's labels (`memlens labels-from-hindsight` at each chunk's first call); accepting them labels the chunks and fits", async () => {
  // The CLI's table: one row per chunk per call; the suggestion is the row at its first call.
  const csv = execFileSync(MEMLENS, ['labels-from-hindsight', SAMPLE]).toString().trim().split('\n');
  const head = csv[0].split(',');
  const col = (name) => head.indexOf(name);
  const first = new Map();
  for (const line of csv.slice(1)) {
    const f = line.split(',');
    const [key, call] = [f[col('key')], Number(f[col('call')])];
    if (f[col('category')] === 'system') continue;
    if (!first.has(key) || first.get(key).call > call) first.set(key, { call, used: f[col('used_later')] === 'true' });
  }
  const want = [...first].map(([key, { used }]) => `${key} ${used ? '★ important' : '✗ useless'}`).sort();
  assert.ok(want.some((w) => w.endsWith('important')) && want.some((w) => w.endsWith('useless')), want.join('; '));

  const { page, state } = await open(browser);
  state.watch();
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  await page.click('#tab-labels');
  await page.waitForSelector('#suggestion-list');
  const got = [];
  for (const tr of await page.locator('#suggestion-list tbody tr').all()) {
    const td = await tr.locator('td').allTextContents();
    got.push(`${td[0]} ${td[2]}`);
  }
  assert.deepEqual(got.sort(), want);
  assert.match(await page.textContent('#suggestion-count'), new RegExp(`^${want.length} suggestion`));
  await shot(page, 'labels-suggestions');
  // Accept one, then the rest: every suggestion becomes a label, and the fit runs on them.
  await page.locator('#suggestion-list button.accept-suggestion').first().click();
  assert.match(await page.textContent('#label-count'), /^1 labelled/);
  await page.click('#accept-suggestions');
  assert.match(await page.textContent('#label-count'), new RegExp(`^${want.length} labelled`));
  assert.match(await page.textContent('#suggestion-count'), /^0 suggestion/);
  await page.click('#fit');
  await page.waitForSelector('#fit-after');
  assert.deepEqual(state.network(), [], 'no request after load');
  assert.deepEqual(state.errors, []);
  await page.close();
});
