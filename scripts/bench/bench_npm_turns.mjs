// The npm pool's per-turn cost in more turns than `scripts/npm.sh bench` takes: 10,000 tau-bench
// messages added, then five rounds of 1,000 turns (add + context, budget 8,000), the median of
// each round in µs, for `value` and `window`. Point it at two builds of the package to compare
// them on the same machine in one sitting:
//   node scripts/bench/bench_npm_turns.mjs packages/memlens [tau-bench.json]
import { filledPool, loadPackage, tauStream, TAU } from "./bench_npm_common.mjs";

const { MemoryPool } = await loadPackage(process.argv[2] ?? "packages/memlens");
const tau = tauStream(process.argv[3] ?? TAU);
const { stream } = tau;
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
for (const policy of ["value", "window"]) {
  const pool = filledPool(MemoryPool, policy, tau);
  let i = 10000;
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
