// The page starts from its first module; every other view's code is a module of its own
// (scripts/web_app.sh, web/src/app/split.rs), fetched once the page is usable. A module that
// cannot be fetched is an error in its view, not a dead page, and opening the view again
// fetches it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, shot, URL_BASE } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('views load their own modules; one that cannot be fetched says so and loads when opened again', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const fetched = [];
  page.on('request', (r) => fetched.push(r.url().slice(URL_BASE.length)));
  let blocked = true;
  const simulator = [];
  await page.route('**/app/split_*simulator*', (route) => {
    simulator.push(blocked ? 'aborted' : 'served');
    return blocked ? route.abort() : route.continue();
  });
  await page.goto(`${URL_BASE}#sample`);
  await page.waitForSelector('#k-calls', { timeout: 60000 });
  const isView = (u) => /^app\/(split|chunk)_.*\.wasm$/.test(u);
  // The first module starts the page; the views' modules follow it, unasked (the prefetch).
  assert.ok(fetched.includes('app/app_bg.wasm'), JSON.stringify(fetched));
  assert.ok(fetched.findIndex(isView) > fetched.indexOf('app/app_bg.wasm'), JSON.stringify(fetched));
  await page.waitForFunction(() => document.querySelector('#tab-simulator'));
  await page.click('#tab-simulator');
  await page.waitForSelector('#view-failed');
  await shot(page, 'view-module-failed');
  // The page lives on: the other views open.
  await page.click('#tab-chunks');
  await page.waitForSelector('#filter-category');
  blocked = false;
  await page.click('#tab-simulator');
  await page.waitForSelector('#policy-select');
  assert.equal(simulator.at(-1), 'served');
  assert.ok(simulator.includes('aborted'));
  assert.ok(fetched.filter(isView).length >= 7, `the views' modules: ${fetched.filter(isView)}`);
  assert.deepEqual(errors, []);
  await page.close();
});
