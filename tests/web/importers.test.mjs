// The coding-agent and tracing-export importers in the page: a Claude Code project folder (or
// several dropped files) opens as one set with the subagent linked to its parent call; a
// compaction shows on the growth chart with what its summary kept and lost; the export button
// writes exactly what `memlens convert [--redact]` writes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launch, open, cli, int, shot, ROOT, MEMLENS } from './helpers.mjs';

const CC = path.join(ROOT, 'tests/fixtures/claude-code');
const SESSION_ID = '7d3f6a52-1c9e-4b8a-9f21-5e0c7b4d2a10';
const SECRETS = path.join(ROOT, 'tests/fixtures/openai/secrets-to-redact.json');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

// ~/.claude/projects/<dir>/ as Claude Code writes it: the session, then its subagents' folder.
function projectFolder() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'memlens-cc-'));
  const project = path.join(dir, '-home-dev-shop');
  mkdirSync(path.join(project, SESSION_ID, 'subagents'), { recursive: true });
  copyFileSync(path.join(CC, 'session.jsonl'), path.join(project, `${SESSION_ID}.jsonl`));
  copyFileSync(path.join(CC, 'agent-a7c31f2.jsonl'), path.join(project, SESSION_ID, 'subagents', 'agent-a7c31f2.jsonl'));
  writeFileSync(path.join(project, 'notes.txt'), 'not a trace: left out like the CLI does');
  return project;
}

async function pickTrace(page, id) {
  await page.waitForSelector('#picker');
  await page.locator('#picker tr.pick td:first-child', { hasText: id }).first().click();
  await page.waitForSelector('#k-calls');
}

test('a Claude Code project folder opens as one set, the subagent linked to its call', async () => {
  const folder = projectFolder();
  const ref = cli('inspect', folder, '--json').traces;
  assert.equal(ref.length, 2);
  const { page, state } = await open(browser);
  state.watch();
  await page.setInputFiles('#folder-input', folder);
  await page.waitForSelector('#picker');
  assert.match(await page.textContent('#file-badge'), /2 files/);
  assert.equal(await page.textContent('#trace-count'), String(ref.length));
  const sub = ref.find((t) => t.id !== SESSION_ID);
  await pickTrace(page, sub.id);
  assert.equal(await page.textContent('#k-input'), int(sub.counted_input_tokens));
  // The subagent names the session and the call whose Task tool call started it.
  assert.match(await page.textContent('#parent-trace'), new RegExp(`subagent of ${SESSION_ID}, call 1`));
  // Claude models counted with o200k: the page says so, as inspect does.
  assert.match(await page.textContent('#trace-notes'), /estimates/);
  await shot(page, 'claude-code-folder');
  assert.deepEqual(state.network(), []);
  await page.close();
});

test('several dropped files are one set too', async () => {
  const files = ['session.jsonl', 'agent-a7c31f2.jsonl'].map((f) => [f, readFileSync(path.join(CC, f), 'utf8')]);
  const { page } = await open(browser);
  const dt = await page.evaluateHandle((files) => {
    const dt = new DataTransfer();
    for (const [name, text] of files) dt.items.add(new File([text], name, { type: 'application/json' }));
    return dt;
  }, files);
  await page.dispatchEvent('body', 'drop', { dataTransfer: dt });
  await page.waitForSelector('#picker');
  assert.equal(await page.textContent('#trace-count'), '2');
  await pickTrace(page, 'agent-a7c31f2');
  assert.match(await page.textContent('#parent-trace'), /call 1/);
  await page.close();
});

test('a compaction: marker on the growth chart, kept and lost items as inspect reports them', async () => {
  const file = path.join(CC, 'session.jsonl');
  const ref = cli('inspect', file, '--json').traces[0];
  assert.equal(ref.compactions.length, 1);
  const c = ref.compactions[0];
  const { page } = await open(browser);
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('#compactions');
  assert.equal(await page.locator('#growth-chart .compaction-marker').count(), 1);
  const head = await page.textContent('#compaction-1 summary');
  assert.match(head, new RegExp(`before call ${c.first_call}`));
  assert.match(head, new RegExp(`replaced ${c.replaced_chunks} chunks`));
  const tally = await page.textContent('#compaction-1 table.tally');
  assert.ok(tally.includes(`${c.paths.kept}/${c.paths.replaced}`), tally);
  assert.ok(tally.includes(`${c.identifiers.kept}/${c.identifiers.replaced}`), tally);
  assert.equal(await page.locator('#compaction-1-lost li').count(), c.lost.length);
  assert.equal(await page.locator('#compaction-1-kept li').count(), c.kept.length);
  for (const item of c.lost) {
    assert.ok((await page.textContent('#compaction-1-lost')).includes(item.text), item.text);
  }
  await shot(page, 'compaction');
  await page.close();
});

test('export: the native format, redacted exactly as memlens convert --redact', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'memlens-export-'));
  const plain = path.join(dir, 'plain.jsonl');
  const redacted = path.join(dir, 'redacted.jsonl');
  execFileSync(MEMLENS, ['convert', SECRETS, '-o', plain], { stdio: 'pipe' });
  const converted = spawnSync(MEMLENS, ['convert', '--redact', SECRETS, '-o', redacted], { encoding: 'utf8' });
  assert.equal(converted.status, 0, converted.stderr);
  const note = converted.stderr;
  const { page, state } = await open(browser);
  state.watch();
  await page.setInputFiles('#file-input', SECRETS);
  await page.waitForSelector('#k-calls');
  const save = async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-trace')]);
    const to = path.join(dir, download.suggestedFilename());
    await download.saveAs(to);
    return { name: download.suggestedFilename(), text: readFileSync(to, 'utf8') };
  };
  // Redaction is on by default: a trace is shared safe unless the user says otherwise.
  assert.equal(await page.isChecked('#redact'), true);
  const safe = await save();
  assert.match(safe.name, /\.redacted\.memlens\.jsonl$/);
  assert.equal(safe.text, readFileSync(redacted, 'utf8'));
  assert.match(safe.text, /\[REDACTED_EMAIL_1\]/);
  assert.equal((await page.textContent('#redaction')).trim(), note.split('\n').find((l) => l.startsWith('redacted')));
  await page.uncheck('#redact');
  const raw = await save();
  assert.equal(raw.text, readFileSync(plain, 'utf8'));
  assert.notEqual(raw.text, safe.text);
  // The loaded trace itself was not redacted by the export.
  assert.equal(await page.textContent('#k-total'), int(cli('inspect', SECRETS, '--json').traces[0].tokens.total));
  assert.deepEqual(state.network(), []);
  await page.close();
});

// Every fixture and real file of the new formats opens in the page as the CLI reads it: same
// format, same traces, same warnings count (the importers are one crate for both).
test('every new-format fixture and real file: the page reads what the CLI reads', async () => {
  const formats = ['claude-code', 'codex', 'gemini-cli', 'openhands', 'swe-agent', 'mini-swe-agent',
    'openinference', 'langfuse', 'langsmith'];
  const files = [];
  for (const format of formats) {
    for (const base of [path.join(ROOT, 'tests/fixtures', format), path.join(ROOT, 'tests/fixtures/real', format)]) {
      let names = [];
      try { names = readdirSync(base); } catch { continue; }
      for (const name of names.sort()) {
        if (!name.endsWith('.md') && !name.startsWith('error-')) files.push([format, path.join(base, name)]);
      }
    }
  }
  assert.ok(files.length >= 40, `${files.length} files`);
  const { page, state } = await open(browser);
  state.watch();
  for (const [format, file] of files) {
    const ref = cli('inspect', file, '--json');
    await page.setInputFiles('#file-input', file);
    // The badge shows the new file's name and format once the worker has loaded it.
    await page.waitForFunction(([name, format]) => {
      const badge = document.querySelector('#file-badge');
      return badge?.querySelector('b')?.textContent === name && badge.textContent.includes(` · ${format} · `)
        && !document.querySelector('#progress');
    }, [path.basename(file), format]);
    const badge = await page.textContent('#file-badge');
    assert.match(badge, new RegExp(` · ${format} · `), file);
    assert.equal(await page.textContent('#trace-count'), String(ref.traces.length), file);
    const warnings = ref.warning_count > 0 ? `${ref.warning_count} warning(s)` : null;
    if (warnings) assert.ok(badge.includes(warnings), `${file}: ${badge}`);
    if (await page.locator('#picker').count()) await page.keyboard.press('Escape');
  }
  assert.deepEqual(state.network(), []);
  await page.close();
});
