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
