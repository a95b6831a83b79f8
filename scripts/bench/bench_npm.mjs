// Benchmarks of the installed `memlens` package against what a JavaScript user would otherwise
// use, in one run on one machine (scripts/npm.sh bench runs it in a scratch consumer project).
//   1. Token counting throughput on the tau-bench messages: memlens vs npm `tiktoken` (wasm) and
//      `js-tiktoken`, all o200k, counts checked equal.
//   2. Per-turn cost of add + context() with 100 / 1,000 / 10,000 messages in the pool, vs a
//      plain JS loop over cached counts (newest messages that fit the budget).
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { MemoryPool, countTokens } from "memlens";
import { encoding_for_model } from "tiktoken";
import { getEncoding } from "js-tiktoken";

const file = process.argv[2];
const tau = JSON.parse(readFileSync(file, "utf8"));
const texts = [];
for (const r of tau) for (const m of r.traj) {
  if (typeof m.content === "string" && m.content) texts.push(m.content);
  for (const c of m.tool_calls ?? []) texts.push(c.function.arguments);
}
const mb = texts.reduce((n, t) => n + Buffer.byteLength(t), 0) / 1e6;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function best(runs, f) {
  let t = Infinity, out;
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    out = f();
    t = Math.min(t, performance.now() - s);
  }
  return [t, out];
}

console.log(`# Node ${process.version}; ${texts.length} texts, ${mb.toFixed(2)} MB (tau-bench messages)`);
console.log("\n## Token counting (o200k, one call per message; best of 3)");
const tk = encoding_for_model("gpt-4o");
const js = getEncoding("o200k_base");
const counters = [
  ["memlens countTokens", () => texts.reduce((n, t) => n + countTokens(t, "gpt-4o"), 0)],
  ["tiktoken (npm, wasm) encode().length", () => texts.reduce((n, t) => n + tk.encode_ordinary(t).length, 0)],
  ["js-tiktoken encode().length", () => texts.reduce((n, t) => n + js.encode(t).length, 0)],
];
const results = counters.map(([name, f]) => { f(); const [ms, total] = best(3, f); return { name, ms, total }; });
const base = results[1];
console.log("| counter | tokens | ms | MB/s | vs npm tiktoken |\n|---|---|---|---|---|");
for (const r of results) {
  console.log(`| ${r.name} | ${r.total} | ${r.ms.toFixed(0)} | ${(mb / (r.ms / 1000)).toFixed(1)} | ${(base.ms / r.ms).toFixed(2)}x |`);
}
if (new Set(results.map((r) => r.total)).size !== 1) {
  console.error("token totals differ between counters");
  process.exitCode = 1;
}
tk.free();

console.log("\n## Per turn: add(message) + context(), budget 8,000 tokens (median of 300 turns)");
// A long conversation: tau-bench messages in order, trajectories one after another.
const stream = [];
for (const r of tau) for (const m of r.traj) if (m.role !== "system") stream.push(m);
const system = tau[0].traj[0];
const TURNS = 300;
console.log("| messages in pool | memlens value (µs/turn) | memlens window (µs/turn) | plain JS loop over cached counts (µs/turn) |\n|---|---|---|---|");
for (const n of [100, 1000, 10000]) {
  const row = [];
  for (const policy of ["value", "window"]) {
    const pool = new MemoryPool({ model: "gpt-4o", budget: 8000, policy });
    pool.add(system);
    let i = 0;
    // Tool results must follow their calls: feed the stream in order, starting anywhere is fine
    // as long as the order is kept.
    for (; i < n; i++) pool.add(stream[i % stream.length]);
    pool.context();
    const times = [];
    for (let k = 0; k < TURNS; k++, i++) {
      const s = performance.now();
      pool.add(stream[i % stream.length]);
      pool.context();
      times.push(performance.now() - s);
    }
    row.push(median(times) * 1000);
    pool.free();
  }
  // The baseline: what an agent does by hand: cached counts, newest messages that fit.
  const counts = [];
  const msgs = [];
  const sysTokens = countTokens(system.content, "gpt-4o") + 4;
  const add = (m) => { msgs.push(m); counts.push(countTokens(typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "") + JSON.stringify(m.tool_calls ?? ""), "gpt-4o") + 4); };
  let i = 0;
  for (; i < n; i++) add(stream[i % stream.length]);
  let sink = 0;
  const times = [];
  for (let k = 0; k < TURNS; k++, i++) {
    const s = performance.now();
    add(stream[i % stream.length]);
    let used = sysTokens, j = msgs.length;
    while (j > 0 && used + counts[j - 1] <= 8000) used += counts[--j];
    sink += [system, ...msgs.slice(j)].length;
    times.push(performance.now() - s);
  }
  const plain = median(times) * 1000;
  console.log(`| ${n.toLocaleString("en")} | ${row[0].toFixed(1)} | ${row[1].toFixed(1)} | ${plain.toFixed(1)} |`);
  if (sink < 0) console.log(sink);
}
