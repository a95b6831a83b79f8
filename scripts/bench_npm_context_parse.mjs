// What a Node turn pays to read the context back from wasm, before and after the message
// references left the JSON text: 10,000 tau-bench messages in a `value` pool (budget 8,000),
// then 300 turns whose context texts and references are kept; then, best of 20 passes over
// them, `JSON.parse` of each text with its references written in (the old shape), of the text
// alone, and the copy of the references that replaced them (`fillContextRefs`, into one kept
// array, as the package reads them).
//   node scripts/bench_npm_context_parse.mjs [PKG_DIR] [tau-bench.json]
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const pkg = path.resolve(process.argv[2] ?? "packages/memlens");
const data = process.argv[3] ?? "../shared/data/traces/tau-bench-gpt-4o-airline.json";
const raw = await import(pathToFileURL(path.join(pkg, "wasm/memlens_wasm.js")).href);
raw.initSync({ module: fs.readFileSync(path.join(pkg, "wasm/memlens_wasm_bg.wasm")) });
const tau = JSON.parse(fs.readFileSync(data, "utf8"));
const stream = [];
for (const r of tau) for (const m of r.traj) if (m.role !== "system") stream.push(m);
const pool = new raw.RawPool({ model: "gpt-4o", budget: 8000, policy: "value" });
pool.addJson(JSON.stringify(tau[0].traj[0]));
let i = 0;
for (; i < 10000; i++) pool.addJson(JSON.stringify(stream[i % stream.length]));
const texts = [], withRefs = [];
let kept = new Uint32Array(1024);
const refsOf = () => {
  const count = pool.fillContextRefs(kept);
  if (count > kept.length) {
    kept = new Uint32Array(2 * count);
    pool.fillContextRefs(kept);
  }
  return kept.subarray(0, count);
};
for (let k = 0; k < 300; k++, i++) {
  pool.addJson(JSON.stringify(stream[i % stream.length]));
  const text = pool.contextJson(undefined);
  const refs = Array.from(refsOf());
  texts.push(text);
  withRefs.push(`{"refs":${JSON.stringify(refs)},${text.slice(1)}`);
}
const best = (f) => {
  let t = Infinity;
  for (let r = 0; r < 20; r++) {
    const s = performance.now();
    f();
    t = Math.min(t, performance.now() - s);
  }
  return ((t / texts.length) * 1000).toFixed(2);
};
const chars = (a) => Math.round(a.reduce((n, t) => n + t.length, 0) / a.length);
console.log(`JSON.parse, references in the text: ${best(() => withRefs.forEach((t) => JSON.parse(t)))} µs per context (${chars(withRefs)} characters)`);
console.log(`JSON.parse, text alone:             ${best(() => texts.forEach((t) => JSON.parse(t)))} µs per context (${chars(texts)} characters)`);
let n = 0;
console.log(`fillContextRefs() copy:             ${best(() => { for (let k = 0; k < texts.length; k++) n += refsOf().length; })} µs per context (${Math.round(n / 20 / texts.length)} references)`);
pool.free();
