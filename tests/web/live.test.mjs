// Following a trace file while it grows (issue 14, "Live"): the file is an OPFS file whose
// handle stands in for the one showOpenFilePicker would give; the test appends to it three
// times while the page is open and checks after each append that the views show what
// `memlens inspect --json` says of the file as it is then, and that the worker parsed only the
// appended bytes (data-parsed equals the file's size, not a sum of re-reads).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { launch, open, cli, int, shot, liveOrder, writeOpfs, LIVE_PICKER, MEMLENS, ROOT, SAMPLE } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const TMP = mkdtempSync(path.join(os.tmpdir(), 'memlens-live-'));

// The sample as an agent's pool writes it while it runs.
function liveLines() {
  const converted = path.join(TMP, 'sample.memlens.jsonl');
  execFileSync(MEMLENS, ['convert', SAMPLE, '-o', converted]);
  return liveOrder(readFileSync(converted, 'utf8'));
}

function reference(text) {
  const file = path.join(TMP, `prefix-${text.length}.jsonl`);
  writeFileSync(file, text);
  return cli('inspect', file, '--json').traces[0];
}

// A page following an OPFS file that holds `first`, incrementally; requests watched from here.
async function startFollowing(first) {
  const { page, state } = await open(browser);
  await page.addInitScript(LIVE_PICKER);
  await page.reload();
  await page.waitForSelector('body[data-worker="ready"]');
  await writeOpfs(page, first, false);
  state.watch();
  await page.click('#follow');
  await page.waitForSelector('#live-badge[data-mode="incremental"]');
  await page.waitForSelector('#k-calls');
  assert.equal(await page.textContent('#k-calls'), int(reference(first).calls));
  return { page, state };
}

// After append `i` (0-based) bringing the file to `text`: the views show what the CLI says of its
// complete lines, and the worker parsed each byte once (no re-import).
async function checkAppend(page, i, text) {
  const complete = text.slice(0, text.lastIndexOf('\n') + 1);
  const ref = reference(complete);
  await page.waitForSelector(`#live-badge[data-updates="${i + 1}"]`, { timeout: 10000 });
  await page.waitForFunction(([calls, chunks]) => document.querySelector('#k-calls')?.textContent === calls
    && document.querySelector('#k-chunks')?.textContent === chunks, [int(ref.calls), int(ref.chunks)], { timeout: 10000 });
  assert.equal(await page.textContent('#k-input'), int(ref.counted_input_tokens));
  const badge = await page.$eval('#live-badge', (e) => ({ ...e.dataset }));
  assert.equal(badge.mode, 'incremental');
  assert.equal(Number(badge.bytes), Buffer.byteLength(text), 'every byte appended reached the worker');
  assert.equal(Number(badge.parsed), Buffer.byteLength(text), 'no byte was parsed twice: no re-import');
  assert.equal(Number(badge.records), complete.split('\n').length - 1, 'records read = complete lines');
}

test('a file that grows while the page is open is followed, reading only what was appended', async () => {
  const lines = liveLines();
  const calls = lines.map((l, i) => [JSON.parse(l).type, i]).filter(([t]) => t === 'call').map(([, i]) => i);
  assert.ok(calls.length >= 6, 'the sample has enough calls to follow');
  // The file at the start holds the first two calls; three appends bring it to the end, the
  // second cutting a line in two (an agent's write caught half way).
  const cuts = [calls[1] + 1, calls[3] + 1, calls[calls.length - 2] + 1, lines.length];
  const parts = cuts.map((c, i) => lines.slice(i === 0 ? 0 : cuts[i - 1], c).join(''));
  const half = Math.floor(parts[2].length / 2);
  const appends = [parts[1], parts[2].slice(0, half), parts[2].slice(half) + parts[3]];

  const { page, state } = await startFollowing(parts[0]);
  let text = parts[0];

  for (const [i, piece] of appends.entries()) {
    await writeOpfs(page, piece, true);
    text += piece;
    await checkAppend(page, i, text);
  }
  const final = cli('inspect', SAMPLE, '--json').traces[0];
  assert.equal(await page.textContent('#k-calls'), int(final.calls), 'the finished file is the sample');
  assert.equal(await page.textContent('#k-total'), int(final.tokens.total));
  assert.match(await page.textContent('#live-badge'), /live · updated \d\d:\d\d:\d\d · \+\d+ record\(s\) in \d+ ms/);
  // Other views follow too: the Calls view lists every call.
  await page.click('#tab-calls');
  await page.waitForSelector('#tab-calls.active');
  await shot(page, 'live-calls');
  await page.click('#tab-overview');
  await shot(page, 'live-overview');
  await page.click('#theme');
  await shot(page, 'live-overview-dark');

  // Stop: the badge goes, the trace stays; a later append is not read.
  await page.click('#follow-stop');
  await page.waitForSelector('#live-badge', { state: 'detached' });
  await page.waitForSelector('#follow');
  assert.equal(await page.textContent('#k-calls'), int(final.calls));
  assert.deepEqual(state.network(), [], 'following makes no request');
  assert.deepEqual(state.errors, []);
});

test('a Claude Code session that grows is followed in parts: each appended line parsed once', async () => {
  // The session fixture written as Claude Code writes it: a line per message, appended.
  const lines = readFileSync(path.join(ROOT, 'tests/fixtures/claude-code/session.jsonl'), 'utf8')
    .split('\n').filter((l) => l.trim()).map((l) => l + '\n');
  const cuts = [6, 10, 14, lines.length];
  const parts = cuts.map((c, i) => lines.slice(i === 0 ? 0 : cuts[i - 1], c).join(''));
  const { page, state } = await startFollowing(parts[0]);
  let text = parts[0];
  for (const [i, piece] of parts.slice(1).entries()) {
    await writeOpfs(page, piece, true);
    text += piece;
    await checkAppend(page, i, text);
  }
  assert.equal(await page.textContent('#k-calls'), int(4), 'the whole session');
  await shot(page, 'live-claude-code');
  assert.deepEqual(state.network(), [], 'following makes no request');
  assert.deepEqual(state.errors, []);
});

test('a followed file in another format is read whole again when it changes', async () => {
  const { page } = await open(browser);
  await page.addInitScript(LIVE_PICKER);
  await page.reload();
  await page.waitForSelector('body[data-worker="ready"]');
  // The sample's OpenAI messages, first without the last two messages.
  const sample = JSON.parse(readFileSync(SAMPLE, 'utf8'));
  const short = { ...sample, messages: sample.messages.slice(0, -2) };
  await writeOpfs(page, JSON.stringify(short), false);
  await page.click('#follow');
  await page.waitForSelector('#live-badge[data-mode="reread"]');
  await page.waitForSelector('#k-calls');
  const before = reference(JSON.stringify(short));
  assert.equal(await page.textContent('#k-calls'), int(before.calls));
  await writeOpfs(page, JSON.stringify(sample), false);
  const ref = cli('inspect', SAMPLE, '--json').traces[0];
  await page.waitForFunction((n) => document.querySelector('#k-calls')?.textContent === n, int(ref.calls), { timeout: 10000 });
  const badge = await page.$eval('#live-badge', (e) => ({ ...e.dataset }));
  // Read whole twice: what was parsed is both files' sizes.
  assert.equal(Number(badge.parsed), Buffer.byteLength(JSON.stringify(short)) + Buffer.byteLength(JSON.stringify(sample)));
});

test('without the File System Access API the page offers Reload instead', async () => {
  const { page } = await open(browser);
  await page.addInitScript('delete Window.prototype.showOpenFilePicker; delete window.showOpenFilePicker;');
  await page.reload();
  await page.waitForSelector('body[data-worker="ready"]');
  assert.equal(await page.locator('#follow').count(), 0);
  await page.click('#load-sample');
  await page.waitForSelector('#k-calls');
  assert.equal(await page.isEnabled('#reload-file'), true);
  assert.match(await page.getAttribute('#reload-file', 'title'), /cannot follow a file/);
  await page.click('#reload-file');
  await page.waitForSelector('#k-calls');
});
