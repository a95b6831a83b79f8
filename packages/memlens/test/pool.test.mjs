// Tests of the installed `memlens` package (scripts/npm.sh test runs them in a scratch consumer
// project where the packed tarball is installed, as a user would install it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryPool, countTokens, analyzeTrace, builtinPolicies, policyConfig } from "memlens";

const ROOT = process.env.MEMLENS_ROOT ?? join(process.cwd(), "../../..");
const TAU = join(ROOT, "../shared/data/traces/tau-bench-gpt-4o-airline.json");
const CLI = join(ROOT, "target/debug/memlens");
const tau = JSON.parse(readFileSync(TAU, "utf8"));

function cli(...args) {
  return JSON.parse(execFileSync(CLI, args, { maxBuffer: 1 << 30, encoding: "utf8" }));
}

// A small deterministic PRNG (mulberry32), so failures reproduce.
function rng(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const words = (r, n) => Array.from({ length: n }, () => `w${Math.floor(r() * 300)}`).join(" ");

/** OpenAI's rules: each tool result answers an open call of the assistant message before it. */
function checkOpenAI(messages) {
  const open = new Set();
  messages.forEach((m, i) => {
    if (m.role === "tool") {
      assert.ok(open.delete(m.tool_call_id), `message ${i}: orphaned tool result ${m.tool_call_id}`);
    } else {
      assert.equal(open.size, 0, `message ${i}: unanswered calls ${[...open]}`);
      for (const c of m.tool_calls ?? []) open.add(c.id);
    }
  });
  assert.equal(open.size, 0, `unanswered calls at the end: ${[...open]}`);
}

/** Anthropic's rules: every tool_use is answered by a tool_result in the next message. */
function checkAnthropic(messages) {
  messages.forEach((m, i) => {
    const uses = Array.isArray(m.content) ? m.content.filter((b) => b.type === "tool_use").map((b) => b.id) : [];
    const next = messages[i + 1];
    const results = new Set(Array.isArray(next?.content) ? next.content.filter((b) => b.type === "tool_result").map((b) => b.tool_use_id) : []);
    for (const id of uses) assert.ok(results.has(id), `message ${i}: tool_use ${id} unanswered`);
    if (Array.isArray(m.content)) {
      const prevUses = new Set(Array.isArray(messages[i - 1]?.content) ? messages[i - 1].content.filter((b) => b.type === "tool_use").map((b) => b.id) : []);
      for (const b of m.content) if (b.type === "tool_result") assert.ok(prevUses.has(b.tool_use_id), `message ${i}: orphaned tool_result ${b.tool_use_id}`);
    }
  });
}

for (const [dialect, check] of [["openai", checkOpenAI], ["anthropic", checkAnthropic]]) {
  test(`invariants on random ${dialect} streams: pairs kept together, system and newest user kept, budget respected or flagged`, () => {
    for (let seed = 1; seed <= 40; seed++) {
      const r = rng(seed);
      const budget = 60 + Math.floor(r() * 2000);
      const policy = ["value", "window", "value-compress", "recall", "langchain-trim"][seed % 5];
      const pool = new MemoryPool({ model: "gpt-4o", budget, policy });
      const system = { role: "system", content: "You are a careful agent." };
      pool.add(system);
      let newestUser;
      for (let step = 0; step < 25; step++) {
        const kind = r();
        if (kind < 0.35) {
          newestUser = { role: "user", content: words(r, 1 + Math.floor(r() * 60)) };
          pool.add(newestUser);
        } else if (kind < 0.6) {
          pool.add({ role: "assistant", content: words(r, 1 + Math.floor(r() * 60)) });
        } else {
          const ids = Array.from({ length: 1 + Math.floor(r() * 3) }, (_, k) => `call_${step}_${k}`);
          if (dialect === "openai") {
            pool.add({ role: "assistant", content: null, tool_calls: ids.map((id) => ({ id, type: "function", function: { name: "lookup", arguments: JSON.stringify({ q: id }) } })) });
            for (const id of ids) pool.add({ role: "tool", tool_call_id: id, content: words(r, 1 + Math.floor(r() * 300)) });
          } else {
            pool.add({ role: "assistant", content: [{ type: "text", text: "Looking." }, ...ids.map((id) => ({ type: "tool_use", id, name: "lookup", input: { q: id } }))] });
            pool.add({ role: "user", content: ids.map((id) => ({ type: "tool_result", tool_use_id: id, content: words(r, 1 + Math.floor(r() * 300)) })) });
          }
        }
        const ctx = policy === "langchain-trim" ? null : pool.context();
        if (!ctx) continue;
        check(ctx.slice(1));
        assert.equal(ctx[0], system, "the system prompt is sent first, as the same object");
        if (newestUser) assert.ok(ctx.includes(newestUser), "the newest user turn is kept");
        const info = pool.lastContext;
        assert.ok(info.tokens <= budget || info.overBudget, `${info.tokens} tokens over ${budget} without the flag`);
      }
      pool.free();
    }
  });
}

// Feeds the first `count` tau-bench records to a fresh pool each, turn by turn, and checks every
// call against `memlens simulate` with the same policy and budget. With `yieldEachTurn` the loop
// awaits a macrotask after each context, as an agent awaiting the model does (the pool does its
// queued value work then). Returns the number of calls compared. The pools record no clock
// times: the trace has none, and replayed in a burst every tool would seem to take no time.
async function replayAgainstSimulate(policy, budget, count, yieldEachTurn) {
  const sim = cli("simulate", TAU, "--model", "gpt-4o", "--budget", String(budget), "--policy", policy, "--json");
  assert.equal(sim.traces.length, tau.length);
  let compared = 0;
  for (const [i, record] of tau.slice(0, count).entries()) {
    const pool = new MemoryPool({ model: "gpt-4o", budget, policy, clock: false });
    const calls = sim.traces[i].calls;
    let call = 0;
    for (const m of record.traj) {
      if (m.role === "assistant") {
        pool.context();
        const got = pool.lastContext;
        const want = calls[call++];
        assert.deepEqual(
          [got.tokens, got.evicted.length, got.compressed.length, got.overBudget],
          [want.input_tokens, want.evictions, want.compressions, want.over_budget],
          `${policy}, trace ${i}, call ${want.index}`,
        );
        compared++;
        if (yieldEachTurn) await new Promise((resolve) => setImmediate(resolve));
      }
      pool.add(m);
    }
    assert.equal(call, calls.length);
    pool.free();
  }
  return compared;
}

test("fed the tau-bench messages turn by turn, the pool decides exactly like `memlens simulate`", async () => {
  for (const policy of ["value", "window", "value-compress", "recall"]) {
    const compared = await replayAgainstSimulate(policy, 4000, tau.length, false);
    assert.ok(compared > 2000, `${compared} calls compared`);
  }
});

test("an agent loop that awaits the model between turns gets the same contexts (value work done while it waits)", async () => {
  // context() schedules the value work it left queued for when the caller yields; an agent's
  // loop yields while it awaits the model. The decisions must not depend on it.
  const compared = await replayAgainstSimulate("value", 2000, 40, true);
  assert.ok(compared > 300, `${compared} calls compared`);
});

test("token counts equal the native CLI's on every tau-bench trace", () => {
  const inspect = cli("inspect", TAU, "--model", "gpt-4o", "--json");
  tau.forEach((record, i) => {
    const pool = new MemoryPool({ model: "gpt-4o", budget: 100000, policy: "keep-all" });
    pool.addMany(record.traj);
    assert.equal(pool.stats().poolTokens, inspect.traces[i].tokens.total + 3, `trace ${i}`);
    pool.free();
  });
  assert.equal(countTokens("hello world", "gpt-4o"), 2);
  assert.equal(countTokens("hello world", "cl100k_base"), 2);
  const text = tau[0].traj[0].content;
  assert.equal(countTokens(text, "gpt-4o"), countTokens(text, "o200k_base"));
});

test("a context longer than any before it is every message, in order (the references' array grows)", () => {
  const pool = new MemoryPool({ model: "gpt-4o", budget: 10_000_000, policy: "keep-all" });
  const added = [];
  for (const record of tau.slice(0, 40)) {
    for (const m of record.traj) {
      if (m.role === "system" && added.length > 0) continue;
      pool.add(m);
      added.push(m);
      // Every context is read: the pool's array starts small and must grow as the run does.
      if (added.length % 97 === 0) assert.equal(pool.context().length, added.length);
    }
  }
  assert.ok(added.length > 1000, `${added.length} messages`);
  const context = pool.context();
  assert.equal(context.length, added.length);
  assert.ok(context.every((m, i) => m === added[i]), "the very objects added, in order");
  pool.free();
});

test("a value nested too deep is an Error, not a trap that breaks the module", () => {
  // 100,000 levels: converting it recursively would overflow the wasm stack (issue 15).
  let deep = "bottom";
  for (let i = 0; i < 100_000; i++) deep = { x: [deep] };
  const pool = new MemoryPool({ model: "gpt-4o", budget: 100 });
  assert.throws(() => pool.add({ role: "user", content: "hi", metadata: deep }),
    (e) => e instanceof Error && /invalid message: nested more than 128 levels/.test(e.message));
  assert.throws(() => pool.setPolicy(deep), /invalid policy: nested more than 128 levels/);
  assert.throws(() => pool.recordUsage(deep), /invalid usage: nested more than 128 levels/);
  // 101 levels is still data, and the module still works.
  let shallow = "bottom";
  for (let i = 0; i < 50; i++) shallow = { x: [shallow] };
  pool.add({ role: "user", content: "still here", metadata: shallow });
  assert.ok(pool.context().length >= 1);
  assert.ok(countTokens("still here", "gpt-4o") > 0);
});

test("errors are JS Errors with clear messages, never traps", () => {
  assert.throws(() => countTokens("x", "my-own-llm"), (e) => e instanceof Error && /unknown model "my-own-llm"/.test(e.message));
  assert.throws(() => new MemoryPool({ model: "gpt-4o", budget: 100, policy: "no-such-policy" }), /unknown policy "no-such-policy"/);
  assert.throws(() => new MemoryPool({ model: "gpt-4o", budget: 100, policy: "{ not json" }), /invalid policy/);
  assert.throws(() => new MemoryPool({ model: "gpt-4o", policy: "value" }), /budget/);
  assert.throws(() => new MemoryPool({ model: "gpt-4o", budget: -5 }), /budget/);
  assert.throws(() => new MemoryPool({ model: "gpt-4o", budget: 100, polcy: "value" }), /unknown field/);
  assert.throws(() => new MemoryPool({ model: "gpt-4o", budget: 100, policy: "letta-summarize" }), /summarizer/);
  const pool = new MemoryPool({ model: "gpt-4o", budget: 100 });
  for (const bad of [3, "hi", null, { content: "no role" }, { role: 7 }, []]) {
    assert.throws(() => pool.add(bad), (e) => e instanceof Error && /invalid message/.test(e.message), JSON.stringify(bad));
  }
  assert.throws(() => pool.explain(42), /unknown chunk id 42/);
  assert.throws(() => pool.label(0, "meh"), /unknown (label|chunk)/);
  assert.throws(() => pool.recordUsage(5), /usage/);
  assert.throws(() => analyzeTrace("not json at all"), (e) => e instanceof Error && /invalid JSON/.test(e.message));
  // The pool still works after errors.
  pool.add({ role: "user", content: "still fine" });
  assert.equal(pool.context().length, 1);
  pool.free();
});

test("free() releases the pool; using it afterwards throws; free twice is harmless", () => {
  const pool = new MemoryPool({ model: "gpt-4o", budget: 100 });
  pool.add({ role: "user", content: "hi" });
  pool.free();
  pool.free();
  assert.throws(() => pool.context(), /freed/);
  assert.throws(() => pool.add({ role: "user", content: "x" }), /freed/);
  // Many pools created and freed do not exhaust wasm memory.
  for (let i = 0; i < 300; i++) {
    const p = new MemoryPool({ model: "gpt-4o", budget: 1000 });
    p.addMany(tau[i % tau.length].traj.slice(0, 6));
    p.context();
    p.free();
  }
});

test("compression returns patched copies and never touches the caller's objects", () => {
  const pool = new MemoryPool({ model: "gpt-4o", budget: 2000, policy: "value-compress" });
  const msgs = tau[3].traj;
  const before = JSON.stringify(msgs);
  let sawPatched = false;
  for (const m of msgs) {
    if (m.role === "assistant") {
      const ctx = pool.context();
      sawPatched ||= ctx.some((x) => !msgs.includes(x));
      checkOpenAI(ctx.slice(1));
    }
    pool.add(m);
  }
  assert.ok(sawPatched, "value-compress at 2000 tokens compresses something on this trace");
  assert.equal(JSON.stringify(msgs), before);
  pool.free();
});

test("a patched message sent again unchanged is the same object, equal to a fresh render", () => {
  // Pool `fresh` switches to the same policy before every context, which renders it afresh;
  // `pool` sends a patch the previous context had as that same object. No clock: two pools
  // would measure their tools' latencies apart.
  const options = { model: "gpt-4o", budget: 2000, policy: "value-compress", clock: false };
  const pool = new MemoryPool(options);
  const fresh = new MemoryPool(options);
  const run = tau.slice(0, 4).flatMap((r, i) => r.traj.filter((m) => i === 0 || m.role !== "system"));
  let previous = [];
  let same = 0;
  for (const m of run) {
    if (m.role === "assistant") {
      const ctx = pool.context();
      fresh.setPolicy(options.policy);
      assert.deepEqual(ctx, fresh.context());
      const patched = ctx.filter((x) => !run.includes(x));
      same += patched.filter((x) => previous.includes(x)).length;
      previous = patched;
    }
    pool.add(m);
    fresh.add(m);
  }
  assert.ok(same > 0, "some patches were sent again as they were");
  pool.free();
  fresh.free();
});

test("a context that only appends to the latest is that one plus the new messages, whatever the caller did to it", () => {
  // Under budget most value contexts only append, and the package extends the list it kept
  // instead of building it again; `fresh` switches to the same policy before every context,
  // which lists it afresh. The caller's array is its own: emptying it changes nothing after.
  const options = { model: "gpt-4o", budget: 3000, policy: "value", clock: false };
  const pool = new MemoryPool(options);
  const fresh = new MemoryPool(options);
  const run = tau.slice(0, 6).flatMap((r, i) => r.traj.filter((m) => i === 0 || m.role !== "system"));
  let grew = 0;
  let previous = [];
  for (const m of run) {
    pool.add(m);
    fresh.add(m);
    if (m.role === "assistant") continue;
    const ctx = pool.context();
    fresh.setPolicy(options.policy);
    const want = fresh.context();
    assert.equal(ctx.length, want.length);
    assert.ok(ctx.every((x, i) => x === want[i] || JSON.stringify(x) === JSON.stringify(want[i])), "same messages");
    if (previous.length > 0 && ctx.length > previous.length && previous.every((x, i) => x === ctx[i])) grew++;
    previous = ctx.slice();
    ctx.length = 0;
  }
  assert.ok(grew > 10, `${grew} contexts were the latest plus new messages`);
  pool.free();
  fresh.free();
});

test("summaries come from the caller's summarizer, never faked", async () => {
  const seen = [];
  const pool = new MemoryPool({
    model: "gpt-4o", budget: 1500, policy: "letta-summarize",
    summarizer: async (messages, { maxTokens }) => { seen.push([messages.length, maxTokens]); return `covered ${messages.length} messages`; },
  });
  let summarized = false;
  for (const m of tau[0].traj) {
    if (m.role === "assistant") {
      const ctx = await pool.contextAsync();
      summarized ||= ctx.some((x) => typeof x.content === "string" && x.content.startsWith("[Summary of earlier conversation]"));
    }
    pool.add(m);
  }
  assert.ok(summarized && seen.length > 0, "letta-summarize at 1500 tokens summarizes on this trace");
  assert.throws(() => pool.context(), /contextAsync/);
  pool.free();
});

test("labels, explain, usage and the exported trace round-trip through the analyzer", () => {
  const pool = new MemoryPool({ model: "gpt-4o", budget: 2500, policy: "value" });
  const ids = pool.addMany(tau[5].traj.slice(0, 2));
  pool.label(ids[1][0], "important");
  for (const m of tau[5].traj.slice(2)) {
    if (m.role === "assistant") {
      pool.context();
      pool.recordUsage({ prompt_tokens: 1000, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 512 } });
    }
    pool.add(m);
  }
  const e = pool.explain(ids[1][0]);
  assert.equal(e.status, "kept");
  assert.equal(e.value.factors.pinned, 1);
  assert.ok(pool.explain(0).reason.includes("system prompt"));
  const stats = pool.stats();
  assert.equal(stats.reportedInputTokens, 1000 * stats.calls);
  const jsonl = pool.exportTrace();
  const a = analyzeTrace(jsonl, { fileName: "export.jsonl" });
  assert.equal(a.format, "memlens");
  assert.equal(a.traces.length, 1);
  assert.equal(a.traces[0].summary.calls, stats.calls);
  assert.ok(a.traces[0].chunks.length >= stats.chunks);
  assert.deepEqual(builtinPolicies().includes("value"), true);
  assert.equal(policyConfig("window").strategy, "window");
  pool.free();
});

test("analyzeTrace gives the web app's analysis of the tau-bench file", () => {
  const a = analyzeTrace(readFileSync(TAU), { model: "gpt-4o", trace: 0 });
  const inspect = cli("inspect", TAU, "--model", "gpt-4o", "--json");
  assert.equal(a.format, "tau-bench");
  assert.equal(a.traces[0].summary.calls, inspect.traces[0].calls);
  assert.equal(a.traces[0].chunks.length, inspect.traces[0].chunks);
});

test("analyzeTrace reads a Claude Code session with its compaction, as memlens inspect does", () => {
  const file = join(ROOT, "tests/fixtures/claude-code/session.jsonl");
  const a = analyzeTrace(readFileSync(file), { fileName: "session.jsonl" });
  const inspect = cli("inspect", file, "--json").traces[0];
  assert.equal(a.format, "claude-code");
  const t = a.traces[0];
  assert.equal(t.summary.calls, inspect.calls);
  assert.equal(t.summary.counted_input_tokens, inspect.counted_input_tokens);
  assert.equal(t.compactions.length, inspect.compactions.length);
  assert.deepEqual(t.compactions[0].paths, inspect.compactions[0].paths);
  assert.deepEqual(t.compactions[0].lost, inspect.compactions[0].lost);
  assert.ok(t.summary.notes.some((n) => /estimates/.test(n)), t.summary.notes.join("; "));
});

test("analyzeTrace reads the other new formats: SWE-agent, Codex, OpenHands, Langfuse", () => {
  for (const [dir, name, format] of [
    ["swe-agent", "query-steps.traj", "swe-agent"],
    ["codex", "session.jsonl", "codex"],
    ["openhands", "v1-sdk-events.jsonl", "openhands"],
    ["langfuse", "trace.json", "langfuse"],
  ]) {
    const file = join(ROOT, "tests/fixtures", dir, name);
    const a = analyzeTrace(readFileSync(file), { fileName: name });
    const inspect = cli("inspect", file, "--json").traces;
    assert.equal(a.format, format, name);
    assert.equal(a.traces.length, inspect.length, name);
    assert.equal(a.traces[0].summary.calls, inspect[0].calls, name);
  }
});

test("the PolicyName type lists exactly the built-in policies, and the oracle is refused live", () => {
  const dts = readFileSync(join(ROOT, "packages/memlens/index.d.ts"), "utf8");
  const union = dts.match(/export type PolicyName =([^;]*);/);
  assert.ok(union, "index.d.ts declares PolicyName");
  const names = [...union[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]);
  assert.deepEqual(names, builtinPolicies());
  assert.throws(() => new MemoryPool({ model: "gpt-4o", budget: 1000, policy: "oracle" }),
    (e) => e instanceof Error && /only for replays/.test(e.message));
});

test("a policy object with the thresholds decides like memlens simulate with the same policy file", () => {
  const policy = { ...policyConfig("value-compress"), name: "lean", value_threshold: 0.35, cleanup: { trigger: 0.95, target: 0.8 } };
  const file = join(process.cwd(), "lean-policy.json");
  writeFileSync(file, JSON.stringify(policy));
  const sim = cli("simulate", TAU, "--model", "gpt-4o", "--budget", "4000", "--policy", file, "--json");
  tau.slice(0, 15).forEach((record, i) => {
    const pool = new MemoryPool({ model: "gpt-4o", budget: 4000, policy, clock: false });
    const sent = [];
    for (const m of record.traj) {
      if (m.role === "assistant") {
        pool.context();
        sent.push(pool.lastContext.tokens);
      }
      pool.add(m);
    }
    assert.deepEqual(sent, sim.traces[i].calls.map((c) => c.input_tokens), `trajectory ${i}`);
    pool.free();
  });
});

test("setPolicy mid-run: from then on the pool decides as the new policy would have from the start", () => {
  // The tool rules of the policy language, from JavaScript: a tool's results keep only some
  // fields; quotas by value.
  const lean = { ...policyConfig("value"), name: "lean", quota_order: "value", quotas: { tool_result: 0.5 },
    tools: { get_reservation_details: { keep_fields: ["reservation_id", "flights"] } } };
  const file = join(process.cwd(), "lean-tools-policy.json");
  writeFileSync(file, JSON.stringify(lean));
  const sim = cli("simulate", TAU, "--model", "gpt-4o", "--budget", "3000", "--policy", file, "--json");
  let compared = 0;
  tau.slice(0, 15).forEach((record, i) => {
    const pool = new MemoryPool({ model: "gpt-4o", budget: 3000, policy: "window", clock: false });
    const half = Math.floor(record.traj.length / 2);
    let call = 0;
    record.traj.forEach((m, k) => {
      if (k === half) {
        pool.setPolicy(lean);
        assert.equal(pool.stats().policy, "lean");
      }
      if (m.role === "assistant") {
        pool.context();
        if (k >= half) {
          assert.equal(pool.lastContext.tokens, sim.traces[i].calls[call].input_tokens, `trajectory ${i}, call ${call}`);
          compared++;
        }
        call++;
      }
      pool.add(m);
    });
    assert.throws(() => pool.setPolicy("oracle"), (e) => e instanceof Error && /only for replays/.test(e.message));
    pool.free();
  });
  assert.ok(compared > 50, `${compared} calls compared`);
});

test("a scorer's values drive the value threshold; protection and the invariants still hold", () => {
  // The host says tool results of `list_all_airports` are worthless and everything else is
  // worth 1: with a value threshold, those results (with their calls) leave the context once
  // the model has seen them, and nothing else does.
  // From the first call (`act_from: 0`), and the preset's echo rule off: only the threshold acts.
  const policy = { ...policyConfig("value"), value_threshold: 0.5, act_from: 0, evict_echoed_replies: null };
  const worthless = "list_all_airports";
  let scored = 0;
  const scorer = (message) => {
    scored++;
    const call = message.tool_calls?.[0]?.function?.name ?? message.name;
    return call === worthless ? 0 : 1;
  };
  const record = tau.find((r) => r.traj.some((m) => m.role === "tool" && m.name === worthless));
  assert.ok(record, "a trajectory calls list_all_airports");
  const pool = new MemoryPool({ model: "gpt-4o", budget: 100000, policy, scorer });
  const ids = [];
  let first = null; // the first worthless result and its position
  let checked = 0;
  record.traj.forEach((m, k) => {
    if (m.role === "assistant") {
      const sent = pool.context();
      // Once seen (not added for this very call) and out of the newest two messages (protected),
      // the caller's own result object is no longer sent.
      if (first !== null && k > first.at + 2) {
        assert.ok(!sent.includes(first.message), `message ${k}`);
        checked++;
      }
      // Under a 100k budget only the scorer's zeros are evicted: everything else is sent.
      assert.equal(pool.lastContext.evicted.every((id) => ids[id] === worthless), true);
    }
    for (const id of pool.add(m)) ids[id] = m.name ?? m.tool_calls?.[0]?.function?.name;
    if (m.role === "tool" && m.name === worthless && first === null) first = { message: m, at: k };
  });
  assert.ok(scored > 0 && checked > 0, `${scored} scored, ${checked} checked`);
  assert.throws(() => pool.setValue(0, Number.NaN), TypeError);
  assert.throws(() => new MemoryPool({ model: "gpt-4o", budget: 10, scorer: 3 }), TypeError);
  pool.free();
});

test("traceFile: the pool appends its trace as it runs; every step's file reads, the last equals the export", () => {
  const file = join(tmpdir(), `memlens-trace-${process.pid}.jsonl`);
  rmSync(file, { force: true });
  const pool = new MemoryPool({ model: "gpt-4o", budget: 2000, policy: "window", traceFile: file });
  assert.throws(() => pool.traceLines(), /writes its trace to traceFile itself/);
  let calls = 0;
  for (const m of tau[3].traj) {
    if (m.role === "assistant") pool.context();
    pool.add(m);
    if (m.role === "assistant") pool.recordUsage({ prompt_tokens: 1000 + calls, completion_tokens: 7 });
    // The file as it is now: a valid trace whose calls only grow.
    const now = analyzeTrace(readFileSync(file), { fileName: "run.jsonl" });
    assert.ok(now.traces[0].summary.calls >= calls);
    calls = now.traces[0].summary.calls;
  }
  const exported = pool.exportTrace();
  pool.free();
  const written = analyzeTrace(readFileSync(file), { fileName: "run.jsonl" });
  const expected = analyzeTrace(exported, { fileName: "run.jsonl" });
  assert.deepEqual(written, expected);
  assert.ok(written.traces[0].summary.reported_input_tokens > 0, "usage recorded after each call reached the file");
  rmSync(file, { force: true });
  // Without traceFile, traceLines() hands out the same lines.
  const p = new MemoryPool({ model: "gpt-4o", budget: 2000, policy: "window" });
  let text = "";
  for (const m of tau[3].traj) {
    if (m.role === "assistant") p.context();
    p.add(m);
    text += p.traceLines();
  }
  text += p.traceLines({ finish: true });
  assert.equal(p.traceLines({ finish: true }), "");
  assert.deepEqual(analyzeTrace(text, { fileName: "run.jsonl" }), analyzeTrace(p.exportTrace(), { fileName: "run.jsonl" }));
  p.free();
});

test("keepHistory: false releases what the policy gave up, writes the same traceFile, refuses what needs the history", () => {
  // Twenty trajectories as one long run: most of it is given up under a 2,000-token window.
  const run = [tau[0].traj[0], ...tau.slice(0, 20).flatMap((r) => r.traj.filter((m) => m.role !== "system"))];
  const files = [true, false].map((keep) => join(tmpdir(), `memlens-keep-${keep}-${process.pid}.jsonl`));
  files.forEach((f) => rmSync(f, { force: true }));
  // No clock: the two files must be the same byte for byte.
  const options = { model: "gpt-4o", budget: 2000, policy: "window", clock: false };
  const kept = new MemoryPool({ ...options, traceFile: files[0] });
  const released = new MemoryPool({ ...options, traceFile: files[1], keepHistory: false });
  for (const m of run) {
    if (m.role === "assistant") {
      const a = kept.context();
      const b = released.context();
      // The very same objects, in the same order: the window decides as before.
      assert.equal(b.length, a.length);
      a.forEach((x, i) => assert.equal(b[i], x));
    }
    kept.add(m);
    released.add(m);
  }
  assert.equal(released.stats().dropped, kept.stats().dropped);
  assert.ok(released.stats().dropped > run.length / 2, "most of the run was given up");
  assert.throws(() => released.exportTrace(), /export needs the pool's whole history/);
  assert.throws(() => released.setPolicy("value"), /set_policy/);
  kept.free();
  released.free();
  assert.equal(readFileSync(files[1], "utf8"), readFileSync(files[0], "utf8"));
  files.forEach((f) => rmSync(f, { force: true }));
  assert.throws(
    () => new MemoryPool({ budget: 1000, keepHistory: false, summarizer: async () => "s" }),
    /cannot summarize/,
  );
});

test("a message goes in as JSON.stringify writes it; what it cannot write is a clear Error", () => {
  const pool = new MemoryPool({ model: "gpt-4o", budget: 1000 });
  // 129 levels: stringified fine, refused by the JSON reader's nesting limit, worded the same way.
  let deep = "bottom";
  for (let i = 0; i < 129; i++) deep = { x: deep };
  assert.throws(() => pool.add({ role: "user", content: "hi", metadata: deep }),
    /invalid message: nested more than 128 levels/);
  // A cycle cannot be written as JSON: refused (as before: it never ends), the pool still works.
  const cyclic = { role: "user", content: "loop" };
  cyclic.self = cyclic;
  assert.throws(() => pool.add(cyclic), (e) => e instanceof Error && /invalid message/.test(e.message));
  // Fields JSON leaves out (undefined) are left out; toJSON is honoured, as the provider's client does.
  const ids = pool.add({ role: "user", content: { toJSON: () => "the text the API is sent" }, name: undefined });
  assert.equal(ids.length, 1);
  const [sent] = pool.context().slice(-1);
  assert.equal(typeof sent.content, "object", "the very object added is what context() returns");
  const plain = new MemoryPool({ model: "gpt-4o", budget: 1000 });
  const [same] = plain.add({ role: "user", content: "the text the API is sent" });
  assert.equal(pool.explain(ids[0]).tokens, plain.explain(same).tokens, "counted as the text toJSON gives");
});
