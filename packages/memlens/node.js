// Node entry: the wasm module is compiled synchronously from the file next to this one.
import { appendFileSync, readFileSync } from "node:fs";
import * as raw from "./wasm/memlens_wasm.js";
import { makeApi } from "./api.js";

raw.initSync({ module: readFileSync(new URL("./wasm/memlens_wasm_bg.wasm", import.meta.url)) });

/** Nothing to do in Node (the module is ready on import); kept for code shared with browsers. */
export async function init() {}
export const { MemoryPool, countTokens, analyzeTrace, builtinPolicies, policyConfig } = makeApi(raw, {
  appendFile: (path, text) => appendFileSync(path, text),
});
