// `MemoryPool` turns split by kind: turns whose context evicted something (it ranked by value, or
// a rule gave something up) and turns whose context evicted nothing (under budget: for a policy
// that extends the latest context, it only appends). Like scripts/bench/bench_npm.mjs: 10,000
// tau-bench messages, budget 8,000, then 300 turns with no yield between them, so the median turn
// of that benchmark falls in the kind most turns are; this shows where (BENCHMARKS.md, "Live
// pool"). Percentiles of `add` and of `context()` per kind, µs.
//   node scripts/bench/bench_npm_turn_kinds.mjs PKG [policy] [turns] [tau-bench.json]
import { filledPool, loadPackage, tauStream, TAU } from "./bench_npm_common.mjs";
const [pkg, policy = "value", turns = "300", data = TAU] = process.argv.slice(2);
const { MemoryPool } = await loadPackage(pkg);
const tau = tauStream(data);
const { stream } = tau;
const pool = filledPool(MemoryPool, policy, tau);
let i = 10000;
const rows = [];
for (let k = 0; k < Number(turns); k++, i++) {
  let s = performance.now();
  pool.add(stream[i % stream.length]);
  const add = (performance.now() - s) * 1000;
  s = performance.now();
  pool.context();
  const context = (performance.now() - s) * 1000;
  rows.push({ add, context, turn: add + context, evicted: pool.lastContext.evicted.length > 0 });
}
pool.free();
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(1) : "-";
};
const all = rows.map((r) => r.turn);
console.log(`${policy}: ${rows.length} turns, median turn ${pct(all, 0.5)} µs`);
console.log("| turns | count | add p25 / p50 / p75 | context p25 / p50 / p75 | turn p50 / p75 |\n|---|---|---|---|---|");
for (const [name, kind] of [["evicted nothing", rows.filter((r) => !r.evicted)], ["evicted", rows.filter((r) => r.evicted)]]) {
  const f = (key) => [0.25, 0.5, 0.75].map((p) => pct(kind.map((r) => r[key]), p)).join(" / ");
  console.log(`| ${name} | ${kind.length} | ${f("add")} | ${f("context")} | ${pct(kind.map((r) => r.turn), 0.5)} / ${pct(kind.map((r) => r.turn), 0.75)} |`);
}
