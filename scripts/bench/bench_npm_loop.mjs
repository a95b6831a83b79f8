// A Node turn as an agent loop meets it. Each RUN is `PKG:POLICY` (a built package directory and
// a policy; `value` when left out). Every run's pool is fed 10,000 tau-bench messages, then the
// runs take turns (A, B, A, B...) in one process, so drift in this machine's speed falls on all
// alike. A turn is one `MemoryPool.add` and one `MemoryPool.context()`, timed: what the agent
// waits for. Then the loop yields (an `await` of a macrotask, as an agent awaits the model), and
// what the pool does meanwhile (`prepare`, which `context()` schedules) is timed as the yield's
// length. Budget 8,000; 1,000 turns untimed first (V8 optimizes hot wasm functions as they run).
// Per run: the turn's median / mean, the yield's median / mean, and the mean of their sum (all
// the work a turn brings), in µs. Pools in one process slow each other (each holds 10,000
// messages): compare runs of one invocation, not figures across invocations.
//   node scripts/bench/bench_npm_loop.mjs RUN [RUN...]    (TURNS=3000, TAU=tau-bench.json)
//   node scripts/bench/bench_npm_loop.mjs packages/memlens:value packages/memlens:window
import { filledPool, loadPackage, tauStream, TAU } from "./bench_npm_common.mjs";
const specs = process.argv.slice(2);
if (specs.length === 0) throw new Error("usage: node scripts/bench/bench_npm_loop.mjs PKG[:POLICY] [PKG[:POLICY]...]");
const turns = Number(process.env.TURNS ?? 3000);
const tau = tauStream(process.env.TAU ?? TAU);
const { stream } = tau;
const yieldOnce = () => new Promise((resolve) => setImmediate(resolve));
const med = (x) => [...x].sort((p, q) => p - q)[x.length >> 1] * 1000;
const mean = (x) => (x.reduce((s, v) => s + v, 0) / x.length) * 1000;

const runs = [];
for (const spec of specs) {
  const [pkg, policy = "value"] = spec.split(":");
  const { MemoryPool } = await loadPackage(pkg);
  const pool = filledPool(MemoryPool, policy, tau);
  runs.push({ spec, pool, turn: [], waited: [] });
}
await yieldOnce();
const warm = 1000;
for (let k = 0, i = 10000; k < warm + turns; k++, i++) {
  for (const r of runs) {
    const message = stream[i % stream.length];
    let s = performance.now();
    r.pool.add(message);
    r.pool.context();
    const turn = performance.now() - s;
    s = performance.now();
    await yieldOnce();
    const waited = performance.now() - s;
    if (k >= warm) {
      r.turn.push(turn);
      r.waited.push(waited);
    }
  }
}
for (const r of runs) {
  r.pool.free();
  const all = r.turn.map((t, k) => t + r.waited[k]);
  console.log(
    `${r.spec}: turn ${med(r.turn).toFixed(1)} median / ${mean(r.turn).toFixed(1)} mean, ` +
      `while waiting ${med(r.waited).toFixed(1)} / ${mean(r.waited).toFixed(1)}, all ${mean(all).toFixed(1)} mean (µs)`,
  );
}
