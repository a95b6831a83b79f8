// The bundled sample: loads, its numbers match `memlens inspect --json`, every view renders,
// keyboard, help and theme work, and nothing is fetched.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, open, cli, int, shot, SAMPLE } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('the sample loads and matches the CLI', async () => {
  const { page, state } = await open(browser);
  state.watch();
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  const ref = cli('inspect', SAMPLE, '--json').traces[0];
  assert.equal(await page.textContent('#k-calls'), int(ref.calls));
  assert.equal(await page.textContent('#k-chunks'), int(ref.chunks));
  assert.equal(await page.textContent('#k-total'), int(ref.tokens.total));
  assert.equal(await page.textContent('#k-input'), int(ref.counted_input_tokens));
  // The growth chart has one stacked bar per category per call (plus a hover strip per call).
  assert.ok(await page.locator('#growth-chart rect').count() > ref.calls);
  await shot(page, 'sample-overview');

  // 1-8 switch views; each renders.
  const views = ['overview', 'chunks', 'heatmap', 'cost', 'calls', 'graph', 'simulator', 'labels'];
  for (const [i, v] of views.entries()) {
    await page.keyboard.press(String(i + 1));
    await page.waitForSelector(`#tab-${v}.active`);
    await shot(page, `sample-${v}`);
  }
  // The heatmap canvas has pixels drawn.
  await page.keyboard.press('3');
  const painted = await page.evaluate(() => {
    const c = document.querySelector('#heatmap-canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
    return n;
  });
  assert.ok(painted > 100, `heatmap pixels: ${painted}`);
  // The access graph has arcs.
  await page.keyboard.press('6');
  assert.ok(await page.locator('#access-graph path.arc').count() > 0);
  // The URL hash keeps the view.
  assert.match(page.url(), /#view=graph/);

  // Help overlay.
  await page.keyboard.press('?');
  await page.waitForSelector('#help');
  await shot(page, 'sample-help');
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('#help').count(), 0);

  assert.deepEqual(state.network(), [], 'no request after load');
  assert.deepEqual(state.errors, []);
  await page.close();
});

test('the theme is switchable and remembered', async () => {
  const { page } = await open(browser);
  const before = await page.getAttribute('html', 'data-theme');
  await page.click('#theme');
  const flipped = before === 'dark' ? 'light' : 'dark';
  assert.equal(await page.getAttribute('html', 'data-theme'), flipped);
  await page.reload();
  await page.waitForSelector('body[data-worker="ready"]');
  assert.equal(await page.getAttribute('html', 'data-theme'), flipped);
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  await shot(page, `sample-overview-${flipped}`);
  await page.click('#theme');
  await page.close();
});

test('a link with #view and #sample reopens the same place', async () => {
  const { page } = await open(browser, '#sample&view=cost');
  await page.waitForSelector('#cost-top');
  assert.ok(await page.locator('#tab-cost.active').count() === 1);
  await page.close();
});
