// Browser / bundler entry: `await init()` once before using the API (it fetches the .wasm file
// next to this module, or the URL or bytes you pass).
import initWasm, * as raw from "./wasm/memlens_wasm.js";
import { makeApi } from "./api.js";

let ready;
export function init(input) {
  ready ??= initWasm(input === undefined ? undefined : { module_or_path: input });
  return ready;
}
export const { MemoryPool, countTokens, analyzeTrace, builtinPolicies, policyConfig } = makeApi(raw);
