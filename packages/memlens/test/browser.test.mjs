// The package's browser entry in headless Chromium: served as static files from the installed
// package, `await init()`, then the same API as in Node, with the same counts and decisions.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { readFileSync, existsSync } from "node:fs";
import { join, extname } from "node:path";
import { MemoryPool, countTokens } from "memlens";

const ROOT = process.env.MEMLENS_ROOT ?? join(process.cwd(), "../../..");
const PKG = join(process.cwd(), "node_modules/memlens");
const { chromium } = createRequire(join(ROOT, "tools/package.json"))("playwright-core");
const TYPES = { ".js": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };
const PAGE = `<!doctype html><script type="module">
  import { init, MemoryPool, countTokens } from "./browser.js";
  window.run = async (messages) => {
    await init();
    const pool = new MemoryPool({ model: "gpt-4o", budget: 400, policy: "window" });
    const sent = [];
    for (const m of messages) {
      if (m.role === "assistant") sent.push(pool.context().length);
      pool.add(m);
    }
    const out = { count: countTokens("The quick brown fox, in wasm.", "gpt-4o"), sent, stats: pool.stats() };
    pool.free();
    return out;
  };
</script>`;

test("browser entry: init() then the same counts and decisions as in Node", async (t) => {
  const server = createServer((req, res) => {
    const path = req.url === "/" ? null : join(PKG, req.url.split("?")[0]);
    if (path === null) { res.writeHead(200, { "content-type": "text/html" }); return res.end(PAGE); }
    if (!path.startsWith(PKG) || !existsSync(path)) { res.writeHead(404); return res.end(); }
    res.writeHead(200, { "content-type": TYPES[extname(path)] ?? "application/octet-stream" });
    res.end(readFileSync(path));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  t.after(() => browser.close());
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForFunction(() => typeof window.run === "function");
  const messages = [{ role: "system", content: "Be brief." }];
  for (let i = 0; i < 20; i++) {
    messages.push({ role: "user", content: `Question ${i}: what is the status of order W${1000 + i}?` });
    messages.push({ role: "assistant", content: `Order W${1000 + i} shipped on day ${i}.` });
  }
  const got = await page.evaluate((m) => window.run(m), messages);
  assert.deepEqual(errors, []);

  const pool = new MemoryPool({ model: "gpt-4o", budget: 400, policy: "window" });
  const sent = [];
  for (const m of messages) {
    if (m.role === "assistant") sent.push(pool.context().length);
    pool.add(m);
  }
  assert.equal(got.count, countTokens("The quick brown fox, in wasm.", "gpt-4o"));
  assert.deepEqual(got.sent, sent);
  assert.equal(got.stats.sentTokens, pool.stats().sentTokens);
  assert.ok(got.stats.dropped > 0, "the window dropped old turns at 400 tokens");
  pool.free();
});
