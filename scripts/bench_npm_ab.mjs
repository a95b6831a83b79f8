// Two builds of the npm package side by side in one process, turns interleaved (A, B, A, B...),
// so drift in this machine's speed falls on both alike: 10,000 tau-bench messages into each
// pool, then TURNS turns of add + context (budget 8,000), median and mean per build.
//   node scripts/bench_npm_ab.mjs PKG_A PKG_B [policy] [turns] [tau-bench.json]
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
const [a, b, policy = "value", turns = "4000", data = "../shared/data/traces/tau-bench-gpt-4o-airline.json"] = process.argv.slice(2);
const load = async (p) => (await import(pathToFileURL(path.join(path.resolve(p), "node.js")).href)).MemoryPool;
const pools = [];
const tau = JSON.parse(fs.readFileSync(data, "utf8"));
const stream = [];
for (const r of tau) for (const m of r.traj) if (m.role !== "system") stream.push(m);
for (const p of [a, b]) {
  const MemoryPool = await load(p);
  const pool = new MemoryPool({ model: "gpt-4o", budget: 8000, policy });
  pool.add(tau[0].traj[0]);
  for (let i = 0; i < 10000; i++) pool.add(stream[i % stream.length]);
  pool.context();
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
