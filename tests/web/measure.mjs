// Measures the built app (scripts/web.sh measure): shipped sizes (raw, gzip -9), first paint and
// time to a usable page in headless Chromium, and time to load the tau-bench file (4 MB, 200
// traces) through the file input and to analyze one trace, the 100k-row chunk table, and the
// live follow's latency per append. Prints a Markdown table.
import { readdirSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { launch, int, liveOrder, writeOpfs, LIVE_PICKER, MEMLENS, ROOT, TAU, URL_BASE } from './helpers.mjs';

const RUNS = Number(process.env.RUNS || 5);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const kb = (n) => `${(n / 1024).toFixed(0)} KB`;

const dist = path.join(ROOT, 'dist');
const sizes = (dir, files) => files.map((f) => {
  const bytes = readFileSync(path.join(dist, dir, f));
  return { f: path.join(dir, f), raw: bytes.length, gz: gzipSync(bytes, { level: 9 }).length };
});
// What the page loads before its first paint: the files at the top of dist/ (the worker among
// them) and the page's main module (app/app.js, app/app_bg.wasm, and the split modules' loader
// app.js imports); the views' modules (scripts/web_app.sh) are fetched once the page is usable.
const FIRST = ['app.js', 'app_bg.wasm', '__wasm_split.js'];
const code = (f) => /\.(wasm|js|css|html)$/.test(f);
const first = [...sizes('', readdirSync(dist).filter(code)), ...sizes('app', FIRST)];
console.log('| file | raw | gzip -9 |\n|---|---|---|');
let total = [0, 0];
for (const { f, raw, gz } of first) {
  total = [total[0] + raw, total[1] + gz];
  console.log(`| ${f.replace(/-[0-9a-f]{16}/, '-HASH')} | ${kb(raw)} | ${kb(gz)} |`);
}
const views = sizes('app', readdirSync(path.join(dist, 'app')).filter((f) => code(f) && !FIRST.includes(f)));
const sum = (xs, k) => xs.reduce((a, x) => a + x[k], 0);
console.log(`| the views' modules (app/: ${views.length} files, fetched after the first paint) | ${kb(sum(views, 'raw'))} | ${kb(sum(views, 'gz'))} |`);
console.log(`| total | ${kb(total[0] + sum(views, 'raw'))} | ${kb(total[1] + sum(views, 'gz'))} |\n`);
const page = first.find((x) => x.f === path.join('app', 'app_bg.wasm'));
console.log(`The page's first module (app/app_bg.wasm): ${int(page.gz)} bytes gzip -9 (goal: at most 300,000).\n`);
// Fetched by the worker when a trace first needs them (memlens_core::assets), not at startup.
console.log('| fetched on first use (dist/assets/) | raw | gzip -9 |\n|---|---|---|');
for (const f of readdirSync(path.join(dist, 'assets')).sort()) {
  const bytes = readFileSync(path.join(dist, 'assets', f));
  console.log(`| ${f} | ${kb(bytes.length)} | ${kb(gzipSync(bytes, { level: 9 }).length)} |`);
}
console.log('');

const browser = await launch();
const paint = [], usable = [], ready = [], tauPicker = [], tauTrace = [], tauReport = [], sampleCold = [], sampleWarm = [];
const loadSample = async (page) => {
  const t = Date.now();
  await page.click('#load-sample');
  await page.waitForFunction(() => document.querySelector('#file-badge')?.textContent.includes('support-agent')
    && document.querySelector('#k-calls'), null, { timeout: 60000 });
  return Date.now() - t;
};
for (let i = 0; i < RUNS; i++) {
  const context = await browser.newContext(); // a cold cache each run
  const page = await context.newPage();
  const t0 = Date.now();
  await page.goto(URL_BASE);
  await page.waitForSelector('#load-sample');
  usable.push(Date.now() - t0);
  await page.waitForSelector('body[data-worker="ready"]', { timeout: 60000 });
  ready.push(Date.now() - t0);
  paint.push(await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN));
  // The first trace fetches the o200k vocabulary and builds its table; later ones do not.
  sampleCold.push(await loadSample(page));
  if (existsSync(TAU) && i < 3) {
    const t1 = Date.now();
    await page.setInputFiles('#file-input', TAU);
    await page.waitForSelector('#picker', { timeout: 120000 });
    tauPicker.push(Date.now() - t1);
    const t2 = Date.now();
    await page.locator('#picker tr.pick').nth(7).click();
    await page.waitForSelector('#k-calls', { timeout: 60000 });
    tauTrace.push(Date.now() - t2);
    // The Report button: the worker analyzes the trace, replays the report's policies at its
    // budgets and draws the page; the download is the end.
    const t3 = Date.now();
    await Promise.all([page.waitForEvent('download', { timeout: 120000 }), page.click('#export-report')]);
    tauReport.push(Date.now() - t3);
    sampleWarm.push(await loadSample(page));
  }
  await context.close();
}
// A large synthetic file (about 16 MB of OpenAI JSON Lines, 1,500 conversations of 25 messages):
// load time, and the longest gap between animation frames on the page meanwhile (the worker
// keeps the main thread free).
let rng = 7;
const rand = () => { rng = (rng * 1103515245 + 12345) % 2147483648; return rng / 2147483648; };
const words = 'order flight hotel refund invoice shipment account password reservation seat baggage upgrade cancel change status delivery address warehouse ticket support agent policy premium economy business loyalty points voucher'.split(' ');
const say = (n) => Array.from({ length: n }, () => words[Math.floor(rand() * words.length)]).join(' ');
const lines = [];
for (let c = 0; c < 1500; c++) {
  const messages = [{ role: 'system', content: 'You are a support agent for a travel company. Follow the policy.' }];
  for (let t = 0; t < 12; t++) {
    messages.push({ role: 'user', content: `${say(40)} ref R${c}-${t}` });
    messages.push({ role: 'assistant', content: `${say(60)} R${c}-${t} done.` });
  }
  lines.push(JSON.stringify({ model: 'gpt-4o', messages }));
}
const big = path.join(ROOT, 'target/web-artifacts/synthetic-large.jsonl');
writeFileSync(big, lines.join('\n') + '\n');
const bigLoad = [], bigGap = [];
for (let i = 0; i < 3; i++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(URL_BASE);
  await page.waitForSelector('body[data-worker="ready"]', { timeout: 60000 });
  await page.evaluate(() => { window.__gap = 0; let last = performance.now(); const tick = (t) => { window.__gap = Math.max(window.__gap, t - last); last = t; if (!window.__stop) requestAnimationFrame(tick); }; requestAnimationFrame(tick); });
  const t = Date.now();
  await page.setInputFiles('#file-input', big);
  await page.waitForSelector('#picker', { timeout: 300000 });
  bigLoad.push(Date.now() - t);
  bigGap.push(await page.evaluate(() => { window.__stop = true; return window.__gap; }));
  await context.close();
}
// The chunk table with 100,000 rows (one trace: 99,999 user messages, then the one reply, so one
// call carries them all): time to the overview, then the table scrolled top to bottom in 120
// steps, one per animation frame; the longest and the median gap between frames while it
// scrolls, and how many rows the DOM holds (the table draws only what is visible).
const rowsFile = path.join(ROOT, 'target/web-artifacts/synthetic-100k-rows.json');
{
  const messages = [{ role: 'system', content: 'You triage support tickets.' }];
  for (let i = 1; i < 99999; i++) messages.push({ role: 'user', content: `ticket T${i}: ${say(6)}` });
  messages.push({ role: 'assistant', content: 'Triaged.' });
  writeFileSync(rowsFile, JSON.stringify({ model: 'gpt-4o', messages }));
}
const rowsLoad = [], rowsGapMax = [], rowsGapMedian = [], rowsDom = [];
for (let i = 0; i < 3; i++) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  await page.goto(URL_BASE);
  await page.waitForSelector('body[data-worker="ready"]', { timeout: 60000 });
  const t = Date.now();
  await page.setInputFiles('#file-input', rowsFile);
  await page.waitForSelector('#k-calls', { timeout: 600000 });
  rowsLoad.push(Date.now() - t);
  await page.click('#tab-chunks');
  await page.waitForSelector('#chunk-rows');
  const r = await page.evaluate(() => new Promise((done) => {
    const el = document.querySelector('#chunk-rows');
    const steps = 120, gaps = [];
    let k = 0, last = performance.now(), dom = 0;
    const tick = (t) => {
      gaps.push(t - last); last = t;
      dom = Math.max(dom, el.querySelectorAll('.row, tr').length);
      if (k++ < steps) { el.scrollTop = (el.scrollHeight - el.clientHeight) * k / steps; requestAnimationFrame(tick); }
      else done({ gaps: gaps.slice(1), dom, rows: document.querySelector('#row-count')?.textContent });
    };
    requestAnimationFrame(tick);
  }));
  const sorted = [...r.gaps].sort((a, b) => a - b);
  rowsGapMax.push(sorted[sorted.length - 1]);
  rowsGapMedian.push(sorted[Math.floor(sorted.length / 2)]);
  rowsDom.push(r.dom);
  if (i === 0) console.log(`100k-row table: ${r.rows}`);
  await context.close();
}
// Live follow: a trace followed while one call's records at a time are appended (the OPFS file
// handle stands in for the picked one). Per append: the worker's time to read the new bytes and
// update the traces, the time from the write to the badge (includes waiting for the next look
// at the file, every 500 ms: 250 ms on average), and to the overview showing the new call (the trace's analysis is
// redone on the page's request: it is not incremental).
async function liveLatency(nativeFile, appends) {
  const all = liveOrder(readFileSync(nativeFile, 'utf8'));
  // The trace with the most calls, alone.
  const starts = all.map((l, i) => [JSON.parse(l).type, i]).filter(([t]) => t === 'trace').map(([, i]) => i);
  const spans = starts.map((s, k) => [s, k + 1 < starts.length ? starts[k + 1] : all.length]);
  const calls = (a, b) => all.slice(a, b).filter((l) => l.startsWith('{"type":"call"')).length;
  const [a, b] = spans.reduce((best, s) => (calls(...s) > calls(...best) ? s : best));
  const lines = [all[0], ...all.slice(a, b)];
  const callAt = lines.map((l, i) => [l.startsWith('{"type":"call"'), i]).filter(([c]) => c).map(([, i]) => i);
  const cuts = callAt.slice(-appends - 1).map((i) => i + 1);
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  await page.addInitScript(LIVE_PICKER);
  await page.goto(URL_BASE);
  await page.waitForSelector('body[data-worker="ready"]', { timeout: 60000 });
  await writeOpfs(page, lines.slice(0, cuts[0]).join(''), false);
  await page.click('#follow');
  await page.waitForSelector('#k-calls', { timeout: 600000 });
  const worker = [], badge = [], overview = [], records = [];
  for (let k = 1; k < cuts.length; k++) {
    const piece = lines.slice(cuts[k - 1], cuts[k]).join('');
    // Timed in the page (Playwright's waits poll at growing intervals, up to 500 ms): from the
    // end of the write (OPFS' createWritable copies the file: the harness' cost) to the
    // mutation that shows the badge's update, and the overview's new call count.
    const expected = int(callAt.indexOf(cuts[k] - 1) + 1);
    await page.evaluate(({ k, expected }) => {
      const when = (test) => new Promise((done) => {
        const mo = new MutationObserver(() => { if (test()) { mo.disconnect(); done(performance.now()); } });
        mo.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
      });
      window.__badge = when(() => document.querySelector('#live-badge')?.dataset.updates === String(k));
      window.__overview = when(() => document.querySelector('#k-calls')?.textContent === expected);
    }, { k, expected });
    await writeOpfs(page, piece, true);
    const t = await page.evaluate(() => performance.now());
    badge.push(await page.evaluate(() => window.__badge) - t);
    overview.push(await page.evaluate(() => window.__overview) - t);
    worker.push(Number(await page.getAttribute('#live-badge', 'data-millis')));
    records.push(cuts[k] - cuts[k - 1]);
  }
  const chunks = lines.filter((l) => l.startsWith('{"type":"chunk"')).length;
  await context.close();
  return { worker, badge, overview, records, calls: callAt.length, chunks };
}
// The page↔worker protocol: the worker's own measurement (Request::ProtocolBench) of its JSON
// text replies against serde-wasm-bindgen, on the analysis reply of one trace (the largest
// message), in a worker started the way the page starts it. The shipped worker has no such
// request: scripts/web.sh measure builds one with the `measure` feature into dist/measure/.
async function protocolBench(file, trace) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(URL_BASE);
  await page.waitForSelector('body[data-worker="ready"]', { timeout: 60000 });
  await page.evaluate(() => {
    const input = document.createElement('input');
    input.type = 'file';
    input.id = 'bench-input';
    document.body.append(input);
  });
  await page.setInputFiles('#bench-input', file);
  const result = await page.evaluate(async ({ trace }) => {
    const url = (f) => new URL(f, document.baseURI).href;
    const script = `importScripts(${JSON.stringify(url('measure/worker.js'))});wasm_bindgen(${JSON.stringify(url('measure/worker_bg.wasm'))});`;
    const worker = new Worker(URL.createObjectURL(new Blob([script], { type: 'text/javascript' })));
    // Replies are externally tagged: `"ready"` or `{"loaded": {...}}`.
    const next = (kind) => new Promise((resolve, reject) => {
      worker.onmessage = (ev) => {
        const m = JSON.parse(ev.data);
        const [k, body] = typeof m === 'string' ? [m, {}] : Object.entries(m)[0];
        if (k === kind) resolve(body);
        else if (k === 'error') reject(new Error(body.message));
      };
    });
    await next('ready');
    const file = document.querySelector('#bench-input').files[0];
    worker.postMessage({ json: JSON.stringify({ import: { name: file.name } }), payload: file });
    const loaded = await next('loaded');
    worker.postMessage({ json: JSON.stringify({ protocol_bench: { trace, rounds: 7 } }) });
    const bench = await next('protocol_bench');
    worker.terminate();
    return { ...bench, chunks: loaded.traces[trace].chunks };
  }, { trace });
  await context.close();
  return result;
}
const protocol = [];
if (existsSync(TAU)) protocol.push(['tau-bench, one trajectory', await protocolBench(TAU, 7)]);
protocol.push(['the 100,000-chunk trace', await protocolBench(rowsFile, 0)]);
const tauNative = path.join(ROOT, 'target/web-artifacts/tau.memlens.jsonl');
execFileSync(MEMLENS, ['convert', TAU, '-o', tauNative]);
const live = [['tau-bench, its longest trajectory', await liveLatency(tauNative, 10)]];
await browser.close();
const ms = (xs) => `${Math.round(median(xs))} ms (median of ${xs.length})`;
console.log('| measure | value |\n|---|---|');
console.log(`| first contentful paint | ${ms(paint)} |`);
console.log(`| page usable (header and buttons rendered) | ${ms(usable)} |`);
console.log(`| worker ready (import engine loaded; no tokenizer tables yet) | ${ms(ready)} |`);
console.log(`| the sample, first trace loaded: Load sample to overview (fetches o200k_base, ${kb(readFileSync(path.join(dist, 'assets/o200k_base.tiktoken')).length)}, and builds its table) | ${ms(sampleCold)} |`);
if (sampleWarm.length) console.log(`| the sample again after other traces (vocabulary in place) | ${ms(sampleWarm)} |`);
if (tauPicker.length) {
  console.log(`| tau-bench file (${(readFileSync(TAU).length / 1e6).toFixed(1)} MB, 200 traces): file input to trace picker | ${ms(tauPicker)} |`);
  console.log(`| one trace picked to overview (analysis: values, heatmap, access graph) | ${ms(tauTrace)} |`);
  console.log(`| that trace's Report button to its download (drawn in the worker: analysis, 5 policies x 3 budgets replayed, charts) | ${ms(tauReport)} |`);
}
const mbBig = (readFileSync(big).length / 1e6).toFixed(1);
console.log(`| synthetic ${mbBig} MB JSON Lines (1,500 traces): file input to trace picker | ${ms(bigLoad)} |`);
console.log(`| longest gap between animation frames on the page meanwhile | ${ms(bigGap)} |`);
console.log(`| one trace of 100,000 chunks (${(readFileSync(rowsFile).length / 1e6).toFixed(1)} MB): file input to overview | ${ms(rowsLoad)} |`);
console.log(`| its chunk table scrolled top to bottom in 120 frames: longest gap between frames | ${ms(rowsGapMax)} |`);
console.log(`| the same: median gap between frames | ${ms(rowsGapMedian)} |`);
console.log(`| rows in the DOM while scrolling (most seen) | ${Math.max(...rowsDom)} |`);
for (const [what, r] of live) {
  const perRecord = r.worker.map((w, i) => w / r.records[i]);
  console.log(`| live follow, ${what} (${r.calls} calls, ${r.chunks} chunks), ${r.worker.length} appends of one call (median ${median(r.records)} records): worker time to read an append | ${median(r.worker).toFixed(1)} ms (${median(perRecord).toFixed(2)} ms per record) |`);
  console.log(`| the same: from the write to the live badge updated (includes the wait for the next look, every 500 ms) | ${ms(r.badge)} |`);
  console.log(`| the same: from the write to the overview showing the new call | ${ms(r.overview)} |`);
}
console.log('\n| analysis reply (page↔worker) | protocol | encode | postMessage copy | decode | total |\n|---|---|---|---|---|---|');
for (const [what, r] of protocol) {
  const row = (name, t) => `| ${what} (${int(r.chunks)} chunks, ${kb(r.json_bytes)} of JSON) | ${name} | ${t.encode_ms.toFixed(1)} ms | ${t.clone_ms.toFixed(1)} ms | ${t.decode_ms.toFixed(1)} ms | ${(t.encode_ms + t.clone_ms + t.decode_ms).toFixed(1)} ms |`;
  console.log(row('JSON text (MemLens)', r.json));
  console.log(row('serde-wasm-bindgen', r.serde_wasm_bindgen));
  const ratio = (r.serde_wasm_bindgen.encode_ms + r.serde_wasm_bindgen.clone_ms + r.serde_wasm_bindgen.decode_ms)
    / (r.json.encode_ms + r.json.clone_ms + r.json.decode_ms);
  console.log(`| | serde-wasm-bindgen / JSON | | | | ${ratio.toFixed(2)}x |`);
}
