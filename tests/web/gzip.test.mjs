// Gzipped trace files (`x.traj.json.gz`, `x.jsonl.gz`), picked, dropped or in a folder: the
// worker has the browser decompress them and the page shows what `memlens inspect --json` gives
// for the plain file; a truncated one is named (in a folder, the others still load); one that
// decompresses past the tab's limit is refused with a message, not a crashed tab.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { launch, open, cli, int, shot, FIXTURES, ROOT } from './helpers.mjs';

// Each gzipped fixture (tests/fixtures/web) and the file it is a copy of.
const TRAJ_GZ = path.join(FIXTURES, 'v2-toolcall.traj.json.gz');
const TRAJ = path.join(ROOT, 'tests/fixtures/mini-swe-agent/v2-toolcall.traj.json');
const JSONL_GZ = path.join(FIXTURES, 'cache-breaks.jsonl.gz');
const JSONL = path.join(ROOT, 'tests/fixtures/openai/cache-breaks.jsonl');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

async function sameFigures(page, ref) {
  await page.waitForSelector('#k-calls');
  assert.equal(await page.textContent('#k-calls'), int(ref.calls));
  assert.equal(await page.textContent('#k-chunks'), int(ref.chunks));
  assert.equal(await page.textContent('#k-total'), int(ref.tokens.total));
  assert.equal(await page.textContent('#k-input'), int(ref.counted_input_tokens));
}

test('a gzipped file picked or dropped shows the figures of its plain copy', async () => {
  const { page, state } = await open(browser);
  state.watch();
  await page.setInputFiles('#file-input', TRAJ_GZ);
  await sameFigures(page, cli('inspect', TRAJ, '--json').traces[0]);
  assert.match(await page.textContent('#file-badge'), /v2-toolcall\.traj\.json\.gz/);
  await shot(page, 'gzip-file');
  // Dropped: the bytes as a File, the name ending in .jsonl.gz.
  const bytes = [...readFileSync(JSONL_GZ)];
  const dt = await page.evaluateHandle((bytes) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(bytes)], 'cache-breaks.jsonl.gz'));
    return dt;
  }, bytes);
  await page.dispatchEvent('body', 'drop', { dataTransfer: dt });
  await page.waitForFunction(() => /cache-breaks/.test(document.querySelector('#file-badge')?.textContent));
  await sameFigures(page, cli('inspect', JSONL, '--json').traces[0]);
  assert.deepEqual(state.network(), []);
  assert.deepEqual(state.errors, []);
  await page.close();
});

test('a folder of gzipped files loads as the plain folder; a truncated one is not loaded', async () => {
  const gz = mkdtempSync(path.join(os.tmpdir(), 'memlens-gz-'));
  const plain = mkdtempSync(path.join(os.tmpdir(), 'memlens-plain-'));
  try {
    for (const [packed, original] of [[TRAJ_GZ, TRAJ], [JSONL_GZ, JSONL]]) {
      copyFileSync(packed, path.join(gz, path.basename(packed)));
      copyFileSync(original, path.join(plain, path.basename(original)));
    }
    const ref = cli('inspect', plain, '--json').traces;
    const whole = readFileSync(TRAJ_GZ);
    writeFileSync(path.join(gz, 'cut.traj.json.gz'), whole.subarray(0, whole.length >> 1));
    writeFileSync(path.join(gz, 'notes.txt.gz'), zlib.gzipSync('not a trace: left out'));
    const { page, state } = await open(browser);
    await page.setInputFiles('#folder-input', gz);
    await page.waitForSelector('#picker');
    assert.equal(await page.textContent('#trace-count'), String(ref.length));
    const warnings = await page.textContent('#warnings');
    assert.match(warnings, /not loaded: (\S+\/)?cut\.traj\.json\.gz: not a readable gzip file/);
    assert.doesNotMatch(warnings, /notes\.txt/);
    await page.locator('#picker tr.pick td:first-child', { hasText: ref[0].id }).first().click();
    await sameFigures(page, ref[0]);
    // Alone, the truncated file is an error that names it; the app stays usable.
    await page.setInputFiles('#file-input', path.join(gz, 'cut.traj.json.gz'));
    const error = page.locator('#error');
    await error.waitFor();
    assert.match(await error.textContent(), /cut\.traj\.json\.gz: not a readable gzip file \(corrupt or truncated\)/);
    await shot(page, 'gzip-truncated');
    await page.click('#load-sample');
    await page.waitForSelector('#k-calls');
    assert.deepEqual(state.errors, []);
    await page.close();
  } finally {
    rmSync(gz, { recursive: true, force: true });
    rmSync(plain, { recursive: true, force: true });
  }
});

test('a gzipped file that decompresses past the tab limit is refused with a message', async () => {
  // 1.1 GiB of spaces in a file of about a megabyte: a gzip bomb, written as a stream.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'memlens-bomb-'));
  const bomb = path.join(dir, 'bomb.json.gz');
  try {
    const gzip = zlib.createGzip({ level: 1 });
    const done = once(gzip.pipe(createWriteStream(bomb)), 'finish');
    const block = Buffer.alloc(16 << 20, 0x20);
    for (let i = 0; i < 70; i++) {
      if (!gzip.write(block)) await once(gzip, 'drain');
    }
    gzip.end();
    await done;
    const { page, state } = await open(browser);
    await page.setInputFiles('#file-input', bomb);
    const error = page.locator('#error');
    await error.waitFor({ timeout: 120000 });
    const text = await error.textContent();
    assert.match(text, /bomb\.json\.gz: decompressed, it is more than a browser tab can analyze/);
    assert.match(text, /memlens inspect FILE/);
    // Nothing was imported, and the app is still usable.
    assert.equal(await page.locator('#k-calls').count(), 0);
    await page.click('#load-sample');
    await page.waitForSelector('#k-calls');
    assert.deepEqual(state.errors, []);
    await page.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
