// What `compress.minify_json` can take from a tau-bench file: the tool messages' tokens as
// recorded and minified (o200k), and the message tokens every call sends (each assistant
// message is a call whose input is every message before it), as recorded and with the tool
// results minified. Counts with the npm package's countTokens (scripts/npm.sh build first).
//   node scripts/bench/json_whitespace.mjs [packages/memlens] [tau-bench.json]
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
const [pkg = "packages/memlens", data = "../shared/data/traces/tau-bench-gpt-4o-airline.json"] =
  process.argv.slice(2);
const { countTokens } = await import(pathToFileURL(path.join(path.resolve(pkg), "node.js")).href);
const count = (t) => countTokens(t, "gpt-4o");
const minified = (t) => {
  try {
    const v = JSON.parse(t);
    return v !== null && typeof v === "object" ? JSON.stringify(v) : t;
  } catch {
    return t;
  }
};
let toolMessages = 0, tool = 0, toolMin = 0, sent = 0, sentMin = 0;
const byRole = {};
for (const r of JSON.parse(fs.readFileSync(data, "utf8"))) {
  let prefix = 0, prefixMin = 0;
  const prefixByRole = {};
  for (const m of r.traj) {
    if (m.role === "assistant") {
      sent += prefix;
      sentMin += prefixMin;
      for (const [k, v] of Object.entries(prefixByRole)) byRole[k] = (byRole[k] ?? 0) + v;
    }
    const text = typeof m.content === "string" ? m.content : "";
    const n = count(text);
    const nMin = m.role === "tool" ? count(minified(text)) : n;
    if (m.role === "tool") { toolMessages++; tool += n; toolMin += nMin; }
    prefix += n;
    prefixMin += nMin;
    prefixByRole[m.role] = (prefixByRole[m.role] ?? 0) + n;
  }
}
const pct = (a, b) => `${((a / b) * 100).toFixed(1)}%`;
console.log(`tool messages: ${toolMessages}, tokens ${tool} -> ${toolMin} minified (-${pct(tool - toolMin, tool)})`);
console.log(`message tokens all calls send: ${sent} -> ${sentMin} (-${pct(sent - sentMin, sent)})`);
console.log(`by role: ${Object.entries(byRole).map(([k, v]) => `${k} ${pct(v, sent)}`).join(", ")}`);
