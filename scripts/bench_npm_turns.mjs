// The npm pool's per-turn cost in more turns than `scripts/npm.sh bench` takes: 10,000 tau-bench
// messages added, then five rounds of 1,000 turns (add + context, budget 8,000), the median of
// each round in µs, for `value` and `window`. Point it at two builds of the package to compare
// them on the same machine in one sitting:
//   node scripts/bench_npm_turns.mjs packages/memlens [tau-bench.json]
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const pkg = path.resolve(process.argv[2] ?? "packages/memlens");
const data = process.argv[3] ?? "../shared/data/traces/tau-bench-gpt-4o-airline.json";
const { MemoryPool } = await import(pathToFileURL(path.join(pkg, "node.js")).href);
const tau = JSON.parse(fs.readFileSync(data, "utf8"));
const stream = [];
for (const r of tau) for (const m of r.traj) if (m.role !== "system") stream.push(m);
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
for (const policy of ["value", "window"]) {
  const pool = new MemoryPool({ model: "gpt-4o", budget: 8000, policy });
  pool.add(tau[0].traj[0]);
  let i = 0;
  for (; i < 10000; i++) pool.add(stream[i % stream.length]);
  pool.context();
  const rounds = [];
  for (let r = 0; r < 5; r++) {
    const times = [];
    for (let k = 0; k < 1000; k++, i++) {
      const start = performance.now();
      pool.add(stream[i % stream.length]);
      pool.context();
      times.push(performance.now() - start);
    }
    rounds.push((median(times) * 1000).toFixed(1));
  }
  console.log(`${policy}: ${rounds.join(" ")} µs (median of each round)`);
  pool.free();
}
