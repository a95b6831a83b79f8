// The bundled sample: loads, its numbers match `memlens inspect --json`, every view renders,
// keyboard, help and theme work, and nothing is fetched.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, open, cli, int, shot, ARTIFACTS, SAMPLE } from './helpers.mjs';

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

// Every view in both themes, with its content shown (a call picked, a replay run, a chunk
// open), as full-page screenshots in target/web-artifacts (views-<view>-<theme>.png) to look
// at; and what a screenshot cannot miss checked here: nothing wider than the window (cut or
// scrolled sideways), no text overflowing the header's buttons and badges.
test('every view in both themes: screenshots, nothing wider than the window', async () => {
  const { page, state } = await open(browser);
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  const views = ['overview', 'chunks', 'heatmap', 'cost', 'calls', 'graph', 'simulator', 'labels'];
  for (const theme of ['light', 'dark']) {
    if ((await page.getAttribute('html', 'data-theme')) !== theme) await page.click('#theme');
    for (const v of views) {
      await page.click(`#tab-${v}`);
      await page.waitForSelector(`#tab-${v}.active`);
      if (v === 'calls') {
        await page.locator('#calls-table tr.pick').nth(3).click();
        await page.waitForSelector('#call-view');
      }
      if (v === 'simulator') {
        await page.click('#run-sim');
        await page.waitForSelector('#sim-chart');
        await page.click('#run-frontier');
        await page.waitForSelector('#frontier-chart');
      }
      if (v === 'chunks') {
        await page.locator('#chunk-rows .row').first().click();
        await page.waitForSelector('#chunk-detail');
      }
      const wide = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth, window: window.innerWidth,
        // Header items whose text does not fit their box.
        clipped: [...document.querySelectorAll('header.top button, header.top .file, header.top .live')]
          .filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.id || e.className),
        // Chart labels drawn outside their chart (clipped by the SVG).
        outside: [...document.querySelectorAll('svg text')].filter((t) => {
          const r = t.getBoundingClientRect(), b = t.ownerSVGElement.getBoundingClientRect();
          return r.width > 0 && (r.top < b.top - 1 || r.bottom > b.bottom + 1 || r.left < b.left - 1 || r.right > b.right + 1);
        }).map((t) => t.textContent),
      }));
      assert.ok(wide.page <= wide.window, `${v} (${theme}): page ${wide.page}px wide in a ${wide.window}px window`);
      assert.deepEqual(wide.clipped, [], `${v} (${theme}): header text cut`);
      assert.deepEqual(wide.outside, [], `${v} (${theme}): chart labels outside their chart`);
      await page.screenshot({ path: `${ARTIFACTS}/views-${v}-${theme}.png`, fullPage: true });
      if (v === 'chunks') await page.keyboard.press('Escape');
    }
  }
  assert.deepEqual(state.errors, []);
});
