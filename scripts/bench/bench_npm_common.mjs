// What the scripts/bench/bench_npm_*.mjs benchmarks share: a build of the package loaded from its
// directory, the tau-bench messages as one long conversation (trajectories one after another,
// system prompts left out but the first), and a pool filled with them as every benchmark starts.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const TAU = "../shared/data/traces/tau-bench-gpt-4o-airline.json";

/** `{ MemoryPool, raw }` of the package built in `dir` (`raw`: its wasm bindings). */
export async function loadPackage(dir) {
  const root = path.resolve(dir);
  const { MemoryPool } = await import(pathToFileURL(path.join(root, "node.js")).href);
  const raw = await import(pathToFileURL(path.join(root, "wasm/memlens_wasm.js")).href);
  return { MemoryPool, raw };
}

/** `{ system, stream }`: the file's first system prompt and every other message in order. */
export function tauStream(file = TAU) {
  const tau = JSON.parse(fs.readFileSync(file, "utf8"));
  const stream = [];
  for (const r of tau) for (const m of r.traj) if (m.role !== "system") stream.push(m);
  return { system: tau[0].traj[0], stream };
}

/**
 * A pool (gpt-4o, budget 8,000) given the system prompt and the first `n` messages of the
 * stream, then one context. The next message to add is `stream[n % stream.length]`.
 */
export function filledPool(MemoryPool, policy, { system, stream }, n = 10000) {
  const pool = new MemoryPool({ model: "gpt-4o", budget: 8000, policy });
  pool.add(system);
  for (let i = 0; i < n; i++) pool.add(stream[i % stream.length]);
  pool.context();
  return pool;
}
