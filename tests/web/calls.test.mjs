// The Calls view against `memlens inspect --calls --json` on a log written for it
// (tests/fixtures/openai/cache-breaks.jsonl): a 10-minute pause before call 3, the tool list
// changed at call 5, the first user message edited at call 8. Each call's breakdown adds up to
// the counted input the CLI reports.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { launch, open, cli, int, shot, ROOT } from './helpers.mjs';

const FILE = path.join(ROOT, 'tests/fixtures/openai/cache-breaks.jsonl');
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

async function openCall(page, call) {
  await page.click(`#calls-table tr[data-call="${call}"]`);
  await page.waitForSelector(`#call-view[data-call="${call}"]`);
}

test('calls: why each prefix ended, and a call broken down as the CLI counts it', async () => {
  const ref = cli('inspect', FILE, '--calls', '--json').traces[0];
  const { page, state } = await open(browser);
  state.watch();
  await page.setInputFiles('#file-input', FILE);
  await page.waitForSelector('#k-calls');
  // A column of the growth chart opens its call in the Calls view.
  await page.click('#growth-chart rect.call-column[data-call="8"]');
  await page.waitForSelector('#tab-calls.active');
  await page.waitForSelector('#call-view[data-call="8"]');
  assert.match(page.url(), /#view=calls/);

  const rows = page.locator('#calls-table tbody tr');
  assert.equal(await rows.count(), ref.call_list.length);
  const causes = await page.locator('#calls-table td.cause').allTextContents();
  assert.deepEqual(causes, ref.call_list.map((c) => c.cause));
  assert.match(await page.textContent('#calls-summary'), /broke at 3 /);

  for (const c of ref.call_list) {
    await openCall(page, c.call);
    // Components add up to the chunks, and chunks plus the reply priming to the counted input.
    const tokens = (await page.locator('#call-components tbody tr td:nth-child(3)').allTextContents())
      .map((t) => Number(t.replace(/,/g, '')));
    const chunkTokens = (await page.locator('#call-chunks tbody tr td:nth-child(3)').allTextContents())
      .map((t) => Number(t.replace(/,/g, '')));
    const sum = (xs) => xs.reduce((a, b) => a + b, 0);
    assert.equal(sum(tokens), sum(chunkTokens), `call ${c.call}`);
    const totals = await page.textContent('#call-totals');
    assert.ok(totals.includes(`Counted input ${int(c.counted_input_tokens)} tokens`), totals);
    assert.equal(sum(chunkTokens) + 3, c.counted_input_tokens, `call ${c.call}`);
    assert.equal(await page.getAttribute('#call-change', 'data-cause'), c.cause);
    const newRows = await page.locator('#call-chunks tbody tr td:nth-child(5)').allTextContents();
    assert.equal(newRows.filter((t) => t === 'new').length, c.added.length + c.edited.length, `call ${c.call}`);
  }

  await openCall(page, 5);
  const five = ref.call_list[5];
  assert.match(await page.textContent('#call-change'), /tool definitions changed/);
  assert.ok((await page.textContent('#call-diff')).includes(`${five.edited[0][0]} → ${five.edited[0][1]}`));
  assert.equal(await page.locator('#call-components tbody tr td').first().textContent(), 'tool definitions');
  await shot(page, 'calls-tool-list-changed');
  await page.click('#theme');
  await shot(page, 'calls-tool-list-changed-other-theme');
  await page.click('#theme');

  await openCall(page, 8);
  const eight = ref.call_list[8];
  assert.match(await page.textContent('#call-change'), /edited/);
  assert.ok((await page.textContent('#call-change')).includes(` at ${eight.at}:`));
  assert.ok((await page.textContent('#call-diff')).includes(`${eight.edited[0][0]} → ${eight.edited[0][1]}`));

  await openCall(page, 3);
  assert.match(await page.textContent('#call-change'), /600 s after the previous call/);

  assert.deepEqual(state.network(), []);
  assert.deepEqual(state.errors, []);
  await page.close();
});

// The projection's arithmetic, written again here: a least-squares line through the last 20
// calls (x = 0, 1, ...), continued for the next n calls, each call at least 0.
function aheadJs(ys, n) {
  const tail = ys.slice(-20);
  const m = tail.length;
  const mx = (m - 1) / 2;
  const my = tail.reduce((a, b) => a + b, 0) / m;
  let sxy = 0; let sxx = 0;
  tail.forEach((y, x) => { sxy += (x - mx) * (y - my); sxx += (x - mx) ** 2; });
  const slope = sxx > 0 ? sxy / sxx : 0;
  const b = my - slope * mx;
  const out = [];
  for (let k = 1; k <= n; k++) out.push(Math.max(0, b + slope * (m - 1 + k)));
  return out;
}
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const projectJs = (ys, n) => sum(aheadJs(ys, n));
// Under a policy each call stops at the budget (or the largest input already sent) and its cost
// shrinks in proportion.
function projectCappedJs(inputs, costs, n, budget) {
  const cap = Math.max(budget, ...inputs);
  const kept = aheadJs(inputs, n).map((t) => (t > cap ? cap / t : 1));
  return [sum(aheadJs(inputs, n).map((t, i) => t * kept[i])), sum(aheadJs(costs, n).map((c, i) => c * kept[i]))];
}

function close(actual, expected, what) {
  assert.ok(Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)), `${what}: ${actual} vs ${expected}`);
}

test('projection: the next calls as recorded and under the simulated policy, against the CLI', async () => {
  const file = FILE;
  const ref = cli('inspect', file, '--json').traces[0];
  const { page } = await open(browser);
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('#projection-run[data-usd]:not([data-usd=""])');
  const inputs = ref.calls_detail.map((c) => c.counted.input);
  const costs = ref.calls_detail.map((c) => c.cost_usd);
  for (const n of [10, 37]) {
    await page.fill('#projection-next', String(n));
    close(Number(await page.getAttribute('#projection-run', 'data-tokens')), projectJs(inputs, n), `tokens, n=${n}`);
    close(Number(await page.getAttribute('#projection-run', 'data-usd')), projectJs(costs, n), `cost, n=${n}`);
  }
  // A replay in the simulator adds its own projection, from its managed calls.
  const sim = cli('simulate', file, '--policy', 'window', '--budget', '150', '--json').traces[0];
  await page.click('#tab-simulator');
  await page.selectOption('#policy-select', 'window');
  await page.fill('#budget', '150');
  await page.press('#budget', 'Tab');
  await page.click('#run-sim');
  await page.waitForSelector('#sim-input', { timeout: 60000 });
  await page.click('#tab-overview');
  await page.waitForSelector('#projection-sim');
  const n = 37;
  const [tokens, cost] = projectCappedJs(sim.calls.map((c) => c.input_tokens), sim.calls.map((c) => c.cost_usd), n, 150);
  assert.ok(tokens < projectJs(sim.calls.map((c) => c.input_tokens), n), 'the budget stops the line');
  close(Number(await page.getAttribute('#projection-sim', 'data-tokens')), tokens, 'simulated tokens');
  close(Number(await page.getAttribute('#projection-sim', 'data-usd')), cost, 'simulated cost');
  assert.match(await page.textContent('#projection-sim'), /with window at 150 tokens/);
  await shot(page, 'overview-projection');
  await page.close();
});
