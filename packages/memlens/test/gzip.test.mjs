// analyzeTrace on gzipped bytes (`x.traj.json.gz`, `x.jsonl.gz`, as people archive their logs):
// the same analysis as the plain file, and `memlens inspect --json`'s figures; a truncated or
// corrupt file is an Error naming it, never a trap.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { analyzeTrace } from "memlens";

const ROOT = process.env.MEMLENS_ROOT ?? join(process.cwd(), "../../..");
const FIXTURES = join(ROOT, "tests/fixtures");
const CLI = join(ROOT, "target/debug/memlens");

// Each gzipped fixture and the file it is a copy of.
const PAIRS = [
  ["web/v2-toolcall.traj.json.gz", "mini-swe-agent/v2-toolcall.traj.json"],
  ["web/cache-breaks.jsonl.gz", "openai/cache-breaks.jsonl"],
];

test("analyzeTrace reads gzipped bytes as the plain file, with inspect's figures", () => {
  for (const [packed, plain] of PAIRS) {
    const gz = analyzeTrace(readFileSync(join(FIXTURES, packed)), { fileName: packed });
    const want = analyzeTrace(readFileSync(join(FIXTURES, plain)), { fileName: plain });
    assert.deepEqual(gz.traces, want.traces, packed);
    assert.equal(gz.format, want.format, packed);
    const inspect = JSON.parse(
      execFileSync(CLI, ["inspect", join(FIXTURES, plain), "--json"], { encoding: "utf8" }),
    ).traces;
    assert.equal(gz.traces.length, inspect.length, packed);
    assert.equal(gz.traces[0].summary.calls, inspect[0].calls, packed);
    assert.equal(gz.traces[0].summary.counted_input_tokens, inspect[0].counted_input_tokens, packed);
  }
  // Gzipped here, as an ArrayBuffer: any gzip, by its magic bytes, whatever the name.
  const text = readFileSync(join(FIXTURES, "openai/messages-object.json"));
  const packed = gzipSync(text);
  const fromBuffer = analyzeTrace(packed.buffer.slice(packed.byteOffset, packed.byteOffset + packed.length));
  assert.deepEqual(fromBuffer.traces, analyzeTrace(text).traces);
});

test("a truncated or corrupt gzip file is an Error naming it", () => {
  const whole = readFileSync(join(FIXTURES, PAIRS[0][0]));
  assert.throws(
    () => analyzeTrace(whole.subarray(0, whole.length >> 1), { fileName: "cut.traj.json.gz" }),
    (e) => e instanceof Error && /^cut\.traj\.json\.gz: not a readable gzip file \(corrupt or truncated\)/.test(e.message),
  );
  const corrupt = Buffer.concat([whole.subarray(0, 12), Buffer.alloc(64, 0xff)]);
  assert.throws(
    () => analyzeTrace(corrupt, { fileName: "bad.gz" }),
    (e) => e instanceof Error && /^bad\.gz: .*corrupt or truncated/.test(e.message),
  );
});
