// Where a Node turn of the npm pool goes: 10,000 tau-bench messages added and 1,000 turns not
// timed (V8 recompiles hot wasm functions, optimized, while they run), then TURNS turns, each
// timed apart as `MemoryPool.add` and `MemoryPool.context` (the package as users call it), and
// again on a second pool through the raw wasm handle the package wraps (`addJson`,
// `contextJson`, then `JSON.parse` of its text and `fillContextRefs` into one kept array), budget 8,000. Median / mean
// per part in µs; compare with `memlens-bench --pool`'s native `add_median_us` and
// `context_median_us` (BENCHMARKS.md). The pool timed first measured slower than a second one in
// the same process, untimed turns or not: compare parts within one run.
//   node scripts/bench_npm_split.mjs PKG [policy] [turns] [tau-bench.json]
import { filledPool, loadPackage, tauStream, TAU } from "./bench_npm_common.mjs";
const [pkg, policy = "value", turns = "3000", data = TAU] = process.argv.slice(2);
const { MemoryPool, raw } = await loadPackage(pkg);
const tau = tauStream(data);
const { stream } = tau;
const med = (x) => [...x].sort((p, q) => p - q)[x.length >> 1] * 1000;
const mean = (x) => (x.reduce((s, v) => s + v, 0) / x.length) * 1000;
const report = (name, t) =>
  console.log(`${policy} ${name}: ` + Object.entries(t).map(([k, v]) => `${k} ${med(v).toFixed(1)} / ${mean(v).toFixed(1)}`).join(", "));
const timed = (list, f) => {
  const s = performance.now();
  const out = f();
  list.push(performance.now() - s);
  return out;
};

const pool = filledPool(MemoryPool, policy, tau);
for (let i = 10000; i < 11000; i++) {
  pool.add(stream[i % stream.length]);
  pool.context();
}
const wrapped = { add: [], context: [] };
for (let k = 0, i = 11000; k < Number(turns); k++, i++) {
  timed(wrapped.add, () => pool.add(stream[i % stream.length]));
  timed(wrapped.context, () => pool.context());
}
pool.free();
report("MemoryPool", wrapped);

// The same turns on the raw handle (node.js has instantiated the module on import).
const handle = new raw.RawPool({ model: "gpt-4o", budget: 8000, policy, summarizer: false });
handle.addJson(JSON.stringify(tau.system));
for (let i = 0; i < 10000; i++) handle.addJson(JSON.stringify(stream[i % stream.length]));
handle.contextJson(undefined);
// The references into one kept array, as the package reads them.
let refs = new Uint32Array(1024);
const fillRefs = () => {
  if (handle.fillContextRefs(refs) > refs.length) {
    refs = new Uint32Array(2 * handle.fillContextRefs(refs));
    handle.fillContextRefs(refs);
  }
};
for (let i = 10000; i < 11000; i++) {
  handle.addJson(JSON.stringify(stream[i % stream.length]));
  JSON.parse(handle.contextJson(undefined));
  fillRefs();
}
const bare = { addJson: [], contextJson: [], "JSON.parse": [], fillContextRefs: [] };
for (let k = 0, i = 11000; k < Number(turns); k++, i++) {
  const text = JSON.stringify(stream[i % stream.length]);
  timed(bare.addJson, () => handle.addJson(text));
  const json = timed(bare.contextJson, () => handle.contextJson(undefined));
  timed(bare["JSON.parse"], () => JSON.parse(json));
  timed(bare.fillContextRefs, fillRefs);
}
handle.free();
report("raw wasm", bare);
