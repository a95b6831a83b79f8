// How the npm package's wasm memory grows over a long run: 10,000 tau-bench messages in a pool
// (budget 8,000), then 6,000 turns (an add and a context), the memory's size printed after the
// setup and every 1,000 turns, after one yield (when the package runs `prepare`, which grows the
// memory ahead). BENCHMARKS.md, "Live pool"; docs/benchmarks-history.md, "less garbage and no
// memory growth inside a turn".
//   node scripts/bench/npm_memory_growth.mjs PKG [policy] [tau-bench.json]
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const pkg = path.resolve(process.argv[2] ?? "packages/memlens");
const policy = process.argv[3] ?? "value";
const data = process.argv[4] ?? "../shared/data/traces/tau-bench-gpt-4o-airline.json";
const { MemoryPool } = await import(pathToFileURL(path.join(pkg, "node.js")).href);
// The module node.js instantiated: `initSync` hands back its exports once it has them.
const raw = await import(pathToFileURL(path.join(pkg, "wasm/memlens_wasm.js")).href);
const wasm = raw.initSync({ module: fs.readFileSync(path.join(pkg, "wasm/memlens_wasm_bg.wasm")) });
const tau = JSON.parse(fs.readFileSync(data, "utf8"));
const stream = [];
for (const r of tau) for (const m of r.traj) if (m.role !== "system") stream.push(m);
const pool = new MemoryPool({ model: "gpt-4o", budget: 8000, policy });
pool.add(tau[0].traj[0]);
for (let i = 0; i < 10000; i++) pool.add(stream[i % stream.length]);
pool.context();
const mb = () => (wasm.memory.buffer.byteLength / 2 ** 20).toFixed(1);
console.log(`after 10,000 messages: ${mb()} MB`);
for (let k = 1, i = 10000; k <= 6000; k++, i++) {
  pool.add(stream[i % stream.length]);
  pool.context();
  if (k % 1000 === 0) {
    await new Promise((resolve) => setImmediate(resolve));
    console.log(`after ${k} turns: ${mb()} MB`);
  }
}
pool.free();
