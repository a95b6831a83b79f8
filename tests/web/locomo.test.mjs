// A long conversation (LoCoMo: hundreds of chunks): the chunk table renders only the rows in
// view and scrolls to the last chunk; warnings are listed and counted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { launch, open, cli, int, shot, ROOT } from './helpers.mjs';

const LOCOMO = path.resolve(ROOT, '../shared/data/locomo/locomo10.json');
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('LoCoMo: virtualized table, warnings', { skip: !existsSync(LOCOMO) && 'no ../shared data' }, async () => {
  const ref = cli('inspect', LOCOMO, '--json', '--chunks', '--top', '0');
  const first = ref.traces[0];
  const { page, state } = await open(browser);
  state.watch();
  await page.setInputFiles('#file-input', LOCOMO);
  await page.waitForSelector('#picker', { timeout: 120000 });
  assert.equal(await page.textContent('#trace-count'), String(ref.traces.length));
  await page.locator('#picker tr.pick').first().click();
  await page.waitForSelector('#k-chunks');
  assert.equal(await page.textContent('#k-chunks'), int(first.chunks));
  // Warnings: listed and counted like the CLI's.
  assert.match(await page.textContent('#warnings summary'), new RegExp(`^${ref.warning_count} warning`));
  await page.click('#tab-chunks');
  const n = first.chunk_list.length;
  assert.ok(n > 300);
  assert.equal(await page.textContent('#row-count'), `${n} of ${n} chunks`);
  const rendered = await page.locator('#chunk-rows .row').count();
  assert.ok(rendered < 80, `only the rows in view are in the DOM (${rendered})`);
  await page.locator('#chunk-rows').evaluate((el) => { el.scrollTop = el.scrollHeight; });
  const last = first.chunk_list[n - 1].key;
  await page.locator('#chunk-rows .row span:first-child', { hasText: new RegExp(`^${last}$`) }).waitFor();
  assert.ok(await page.locator('#chunk-rows .row').count() < 80);
  await shot(page, 'locomo-chunks-scrolled');
  assert.deepEqual(state.network(), []);
  assert.deepEqual(state.errors, []);
  await page.close();
});
