// Two builds of the npm package side by side in one process, turns interleaved (A, B, A, B...),
// so drift in this machine's speed falls on both alike: 10,000 tau-bench messages into each
// pool, then TURNS turns of add + context (budget 8,000), median and mean per build.
//   node scripts/bench_npm_ab.mjs PKG_A PKG_B [policy] [turns] [tau-bench.json]
import { filledPool, loadPackage, tauStream, TAU } from "./bench_npm_common.mjs";
const [a, b, policy = "value", turns = "4000", data = TAU] = process.argv.slice(2);
const pools = [];
const tau = tauStream(data);
const { stream } = tau;
for (const p of [a, b]) {
  const { MemoryPool } = await loadPackage(p);
  const pool = filledPool(MemoryPool, policy, tau);
  pools.push(pool);
}
const times = [[], []];
let i = 10000;
for (let k = 0; k < Number(turns); k++, i++) {
  for (let j = 0; j < 2; j++) {
    const s = performance.now();
    pools[j].add(stream[i % stream.length]);
    pools[j].context();
    times[j].push(performance.now() - s);
  }
}
const med = (x) => [...x].sort((p, q) => p - q)[x.length >> 1] * 1000;
const mean = (x) => x.reduce((s, v) => s + v, 0) / x.length * 1000;
console.log(`${policy}: A ${med(times[0]).toFixed(1)} µs median (${mean(times[0]).toFixed(1)} mean)  B ${med(times[1]).toFixed(1)} µs median (${mean(times[1]).toFixed(1)} mean)  B/A ${(med(times[1]) / med(times[0])).toFixed(3)}`);
