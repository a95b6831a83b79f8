// `memlens report` writes one HTML file that needs no script and loads nothing. Opened in
// Chromium with JavaScript disabled: no request but the file itself, no script element, the
// charts inline, and its figures equal to `memlens inspect --json` / `memlens compare --json`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { launch, cli, int, MEMLENS, ARTIFACTS, TAU, FIXTURES, ROOT } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

function report(name, ...args) {
  const out = path.join(ARTIFACTS, `${name}.html`);
  execFileSync(MEMLENS, ['report', ...args, '-o', out], { stdio: ['ignore', 'ignore', 'inherit'] });
  return out;
}

// A page with scripts off that records every request it makes.
async function openStatic(file, colorScheme = 'light') {
  const context = await browser.newContext({ javaScriptEnabled: false, colorScheme, viewport: { width: 1000, height: 900 } });
  const page = await context.newPage();
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(pathToFileURL(file).href);
  return { page, requests, context };
}

// The report's dollars (as the web app writes them).
const usd = (v) => (v === 0 ? '$0' : v < 0.0001 ? '<$0.0001' : v < 1 ? `$${v.toFixed(4)}` : `$${v.toFixed(2)}`);
const number = (t) => Number(t.replace(/[,%$]/g, ''));

test('report: tau-bench, self-contained, figures equal the CLI', async () => {
  const file = report('report-tau', TAU, '--model', 'gpt-4o', '--policies', 'window,value,oracle', '--budgets', '2000,4000');
  const { page, requests, context } = await openStatic(file);
  assert.deepEqual(requests, [pathToFileURL(file).href], 'the page loads nothing');
  assert.equal(await page.locator('script').count(), 0);
  assert.equal(await page.locator('img, iframe, object, embed, link').count(), 0);

  const inspect = cli('inspect', TAU, '--model', 'gpt-4o', '--json').traces;
  const figure = async (label) => page.locator('#overview .figure', { hasText: label }).locator('b').textContent();
  assert.equal(await figure('traces'), int(inspect.length));
  const sum = (f) => inspect.reduce((a, t) => a + f(t), 0);
  assert.equal(await figure('LLM calls'), int(sum((t) => t.calls)));
  assert.equal(await figure('input tokens sent (counted)'), int(sum((t) => t.counted_input_tokens)));
  assert.equal(await page.locator('#traces tbody tr').count(), inspect.length);
  assert.equal(await figure('cost'), usd(sum((t) => t.cost_usd)));

  // The policy table: every policy at every budget, as `memlens compare` reports them.
  for (const budget of [2000, 4000]) {
    const rows = cli('compare', TAU, '--model', 'gpt-4o', '--policies', 'window,value,oracle', '--budget', String(budget), '--json').rows;
    for (const r of rows) {
      const tr = page.locator('#policy-table tbody tr').filter({ has: page.locator(`td:text-is("${r.policy}")`) })
        .filter({ has: page.locator(`td:text-is("${int(budget)}")`) });
      assert.equal(await tr.count(), 1, `${r.policy} at ${budget}`);
      const cells = await tr.locator('td').allTextContents();
      assert.equal(number(cells[2]), r.totals.input_tokens);
      assert.equal(cells[3], `${(r.totals.saved_tokens * 100 / r.totals.full_input_tokens).toFixed(1)}%`);
      assert.ok(cells[6].startsWith(int(r.totals.calls_with_misses) + ' '), cells[6]);
      assert.equal(number(cells[7]), r.totals.violations);
      assert.equal(cells[4], usd(r.totals.cost_usd));
    }
  }
  // Charts: the policy chart, and growth, tools and heatmap for each of the 3 traces in detail.
  assert.equal(await page.locator('#policy-chart svg').count(), 1);
  assert.equal(await page.locator('details.trace').count(), 3);
  assert.equal(await page.locator('details.trace svg').count(), 9);
  // The first detailed trace is the costliest: the growth chart has a bar per call and category.
  const first = page.locator('details.trace').first();
  const id = (await first.locator('summary').textContent()).split(' — ')[0];
  const ref = inspect.find((t) => t.id === id);
  assert.ok(ref, id);
  assert.equal(ref.counted_input_tokens, Math.max(...inspect.map((t) => t.counted_input_tokens)));
  const bars = await first.locator('#growth svg rect').count();
  assert.ok(bars >= ref.calls, `${bars} bars for ${ref.calls} calls`);
  // Nothing wider than the page.
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.equal(overflow, 0);
  await page.screenshot({ path: path.join(ARTIFACTS, 'report-tau-light.png'), fullPage: false });
  await first.locator('#heatmap').scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(ARTIFACTS, 'report-tau-heatmap.png') });
  await context.close();

  const dark = await openStatic(file, 'dark');
  await dark.page.locator('#policies').scrollIntoViewIfNeeded();
  await dark.page.screenshot({ path: path.join(ARTIFACTS, 'report-tau-dark.png') });
  await dark.context.close();
});

test('report: trace content is text, never markup', async () => {
  const file = report('report-xss', path.join(FIXTURES, 'xss.json'), '--budgets', 'none');
  const { page, requests, context } = await openStatic(file);
  assert.deepEqual(requests, [pathToFileURL(file).href]);
  assert.equal(await page.locator('script, img, iframe, object, embed').count(), 0);
  const text = await page.locator('#chunks').textContent();
  assert.match(text, /<img|<script/, 'the payload is shown as text');
  await context.close();
});

test('report: a compaction, what its summary kept, as memlens inspect counts it', async () => {
  const fixture = path.join(ROOT, 'tests/fixtures/claude-code/session.jsonl');
  const ref = cli('inspect', fixture, '--json').traces.find((t) => (t.compactions || []).length);
  const file = report('report-compaction', fixture, '--budgets', 'none', '--trace', ref.id);
  const { page, context } = await openStatic(file);
  const rows = page.locator('#compactions tbody tr');
  assert.equal(await rows.count(), ref.compactions.length);
  const c = ref.compactions[0];
  const cells = await rows.first().locator('td').allTextContents();
  assert.equal(number(cells[1]), c.first_call);
  assert.equal(cells[4], `${c.identifiers.kept} of ${c.identifiers.replaced}`);
  assert.equal(cells[5], `${c.paths.kept} of ${c.paths.replaced}`);
  for (const item of c.lost.slice(0, 8)) assert.ok(cells[8].includes(item.text), item.text);
  // The growth chart marks each compaction with one line in the marker colour (charts.rs
  // COMPACTION_MARK), and nothing else is drawn in it.
  const marks = page.locator('#growth svg [stroke="#D63031" i]');
  assert.equal(await marks.count(), ref.compactions.length);
  await context.close();
});

// The same report from the web app: its Report button downloads what `memlens report FILE
// --trace ID` writes for the analyzed trace, byte for byte (the worker draws it, measuring text
// with the CLI's estimate rather than the browser's fonts: memlens-report's text.rs).
test('report: the web app exports the same report', async () => {
  const { SAMPLE, open } = await import('./helpers.mjs');
  const id = cli('inspect', SAMPLE, '--json').traces[0].id;
  const file = report('report-sample-cli', SAMPLE, '--trace', id);
  const { page, state } = await open(browser);
  state.watch();
  await page.setInputFiles('#file-input', SAMPLE);
  await page.waitForSelector('#k-calls');
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 120000 }), page.click('#export-report')]);
  assert.equal(download.suggestedFilename(), `${id}.report.html`);
  const { readFileSync } = await import('node:fs');
  const fromWeb = readFileSync(await download.path(), 'utf8');
  const fromCli = readFileSync(file, 'utf8');
  assert.ok(fromCli.includes('<svg'), 'the report has charts');
  if (fromWeb !== fromCli) {
    let i = 0;
    while (fromWeb[i] === fromCli[i]) i += 1;
    assert.fail(`the web report differs from the CLI's at character ${i}: ` +
      `${JSON.stringify(fromWeb.slice(i - 40, i + 40))} vs ${JSON.stringify(fromCli.slice(i - 40, i + 40))}`);
  }
  assert.deepEqual(state.network(), [], 'nothing leaves the page');
  assert.deepEqual(state.errors, []);
});
