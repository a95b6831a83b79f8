// The heatmap grouped by category and by tool, groups collapsed and expanded, against the chunks
// `memlens inspect --json --top N` lists (each with its category, tool and calls carried).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, open, cli, shot, SAMPLE } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const count = (xs) => xs.reduce((m, x) => m.set(x, (m.get(x) || 0) + 1), new Map());
const groupsShown = (page) => page.$$eval('#heat-groups .heat-group', (bs) =>
  bs.map((b) => [b.dataset.group, Number(b.dataset.members), b.getAttribute('aria-expanded')]));
const canvasHeight = (page) => page.$eval('#heatmap-canvas', (c) => c.height);

test('heatmap: rows grouped by category and by tool, groups collapse', async () => {
  const ref = cli('inspect', SAMPLE, '--json', '--top', '100000').traces[0];
  assert.equal(ref.top_chunks.length, ref.chunks, 'every chunk listed');
  const carried = ref.top_chunks.filter((c) => c.calls_carried > 0);
  const { page, state } = await open(browser);
  state.watch();
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  await page.click('#tab-heatmap');
  await page.waitForSelector('#heatmap-canvas');
  const flat = await canvasHeight(page);
  assert.equal((await groupsShown(page)).length, 0, 'trace order: no groups');

  await page.selectOption('#heat-group', 'category');
  const byCategory = await groupsShown(page);
  assert.deepEqual(new Map(byCategory.map(([g, n]) => [g, n])), count(carried.map((c) => c.category)));
  // One row per chunk plus one summary row per group.
  const rowHeight = flat / carried.length;
  assert.equal(await canvasHeight(page), Math.round(rowHeight * (carried.length + byCategory.length)));
  await shot(page, 'heatmap-by-category');

  // Collapsing the largest group leaves its summary row only.
  const [name, members] = byCategory.reduce((a, b) => (b[1] > a[1] ? b : a));
  await page.click(`#heat-groups .heat-group[data-group="${name}"]`);
  assert.equal(await page.getAttribute(`.heat-group[data-group="${name}"]`, 'aria-expanded'), 'false');
  assert.equal(await canvasHeight(page), Math.round(rowHeight * (carried.length - members + byCategory.length)));
  // Hovering the first line shows its group's summary.
  const box = await page.locator('#heatmap-canvas').boundingBox();
  await page.mouse.move(box.x + 5, box.y + 1);
  assert.match(await page.textContent('#heat-tip'), /\(\d+ chunks\) at call \d+: (highest value [\d.]+|none in context)/);
  // Clicking a summary row on the canvas toggles its group too.
  const collapsedIndex = byCategory.findIndex(([g]) => g === name);
  const y = byCategory.slice(0, collapsedIndex).reduce((a, [, n]) => a + n + 1, 0);
  await page.mouse.click(box.x + 1, box.y + (y + 0.5) * rowHeight * box.height / (await canvasHeight(page)));
  assert.equal(await page.getAttribute(`.heat-group[data-group="${name}"]`, 'aria-expanded'), 'true');
  assert.equal(await canvasHeight(page), Math.round(rowHeight * (carried.length + byCategory.length)));

  await page.selectOption('#heat-group', 'tool');
  const byTool = await groupsShown(page);
  assert.deepEqual(new Map(byTool.map(([g, n]) => [g, n])),
    count(carried.map((c) => c.tool_name ?? '(no tool)')));
  await shot(page, 'heatmap-by-tool');
  await page.click('#theme');
  await shot(page, 'heatmap-by-tool-dark');
  assert.deepEqual(state.network(), []);
  assert.deepEqual(state.errors, []);
});
