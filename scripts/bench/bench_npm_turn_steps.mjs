// The steps of a `MemoryPool` turn, timed inside the package as users call it: the raw wasm
// handle's `addJson`, `contextJson` and `fillContextRefs`, and `JSON.stringify` / `JSON.parse`,
// are wrapped with timers (on the prototype and the global), so what is left of `add` and
// `context` is the package's own JavaScript (building the returned array, the patches). 10,000
// tau-bench messages and 1,000 untimed turns first, budget 8,000; medians in µs (BENCHMARKS.md,
// "Live pool").
//   node scripts/bench/bench_npm_turn_steps.mjs PKG [policy] [turns] [tau-bench.json]
import { filledPool, loadPackage, tauStream, TAU } from "./bench_npm_common.mjs";
const [pkg, policy = "value", turns = "3000", data = TAU] = process.argv.slice(2);
const { MemoryPool, raw } = await loadPackage(pkg);
const tau = tauStream(data);
const { stream } = tau;
const times = {};
let on = false;
const wrap = (owner, name, label) => {
  const f = owner[name];
  times[label] = [];
  owner[name] = function (...args) {
    if (!on) return f.apply(this, args);
    const s = performance.now();
    const out = f.apply(this, args);
    times[label].push(performance.now() - s);
    return out;
  };
};
wrap(raw.RawPool.prototype, "addJson", "addJson");
wrap(raw.RawPool.prototype, "contextJson", "contextJson");
wrap(raw.RawPool.prototype, "fillContextRefs", "fillContextRefs");
wrap(JSON, "stringify", "JSON.stringify");
wrap(JSON, "parse", "JSON.parse");
const med = (x) => [...x].sort((p, q) => p - q)[x.length >> 1] * 1000;
const pool = filledPool(MemoryPool, policy, tau);
for (let i = 10000; i < 11000; i++) {
  pool.add(stream[i % stream.length]);
  pool.context();
}
const add = [], context = [];
on = true;
for (let k = 0, i = 11000; k < Number(turns); k++, i++) {
  let s = performance.now();
  pool.add(stream[i % stream.length]);
  add.push(performance.now() - s);
  s = performance.now();
  pool.context();
  context.push(performance.now() - s);
}
on = false;
pool.free();
console.log(
  `${policy}: add ${med(add).toFixed(1)}, context ${med(context).toFixed(1)}; ` +
    Object.entries(times).map(([k, v]) => `${k} ${med(v).toFixed(1)}`).join(", ") + " (medians, µs)",
);
