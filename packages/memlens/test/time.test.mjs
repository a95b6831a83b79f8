// Time in the live pool, from JavaScript: messages carry the time they were added (given or the
// clock's), tool results the time their tool took, as MemLens' importers record them in traces,
// so time-based policy rules and the generation-cost value factor act live as in a replay; and
// a message can be marked as a user preference, which the value policies protect.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MemoryPool, analyzeTrace, policyConfig } from "memlens";

const T0 = Date.UTC(2025, 5, 2, 16, 46, 59); // epoch milliseconds
const DAY = 86_400_000;

const call = (id) => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id, type: "function", function: { name: "get_order", arguments: '{"order": "W1001"}' } }],
});
const result = (id) => ({
  role: "tool",
  tool_call_id: id,
  content: Array.from({ length: 30 }, (_, i) => `item ${i}: shipped`).join("; "),
});

// The chunks of a pool's exported trace (native JSON Lines), by id.
function exportedChunks(pool) {
  return pool
    .exportTrace()
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line))
    .filter((r) => r.type === "chunk");
}

test("max_age_seconds evicts by the time messages were written: a Date, epoch ms or ISO text", () => {
  const policy = { ...policyConfig("value"), name: "aged", max_age_seconds: 3600 };
  const run = [
    [new Date(T0), { role: "system", content: "You are a travel agent." }],
    [T0, { role: "user", content: "I want to fly to Lisbon next week." }],
    [new Date(T0 + 5000).toISOString(), { role: "assistant", content: "Lisbon next week: noted." }],
    [T0 + 2 * DAY - 1_800_000, { role: "user", content: "Any hotel near the river?" }],
    [new Date(T0 + 2 * DAY - 1_795_000), { role: "assistant", content: "Three: shall I list them?" }],
    ["2025-06-04T16:46:59Z", { role: "user", content: "Yes, the cheapest first." }],
  ];
  const pool = new MemoryPool({ model: "gpt-4o", budget: 100000, policy });
  const untimed = new MemoryPool({ model: "gpt-4o", budget: 100000, policy, clock: false });
  const clocked = new MemoryPool({ model: "gpt-4o", budget: 100000, policy });
  for (const [timestamp, m] of run) {
    pool.add(m, { timestamp });
    untimed.add(m);
    clocked.add(m);
  }
  const messages = run.map(([, m]) => m);
  // Two days old: out, under a budget that fits everything; half an hour old: kept.
  assert.deepEqual(pool.context(), [messages[0], messages[3], messages[4], messages[5]]);
  assert.deepEqual(pool.lastContext.evicted, [1, 2]);
  assert.equal(pool.explain(1).status, "dropped");
  // Without times (clock off), or all added just now, nothing ages out.
  assert.deepEqual(untimed.context(), messages);
  assert.deepEqual(clocked.context(), messages);
  // Each form of time is written as the importers read it.
  assert.deepEqual(exportedChunks(pool).map((c) => c.meta.timestamp), [
    "2025-06-02T16:46:59Z",
    "2025-06-02T16:46:59Z",
    "2025-06-02T16:47:04Z",
    "2025-06-04T16:16:59Z",
    "2025-06-04T16:17:04Z",
    "2025-06-04T16:46:59Z",
  ]);
  assert.equal(exportedChunks(untimed)[0].meta.timestamp, undefined);
  for (const p of [pool, untimed, clocked]) p.free();
});

test("a value half-life in seconds (the support-bot preset's) decays what was written long ago", () => {
  const policy = { name: "bot", strategy: "value", value_preset: "support-bot" };
  const recency = (timed) => {
    const pool = new MemoryPool({ model: "gpt-4o", budget: 100000, policy, clock: false });
    const at = (ms) => (timed ? { timestamp: ms } : undefined);
    const [old] = pool.add({ role: "user", content: "My order is W1001." }, at(T0));
    pool.add({ role: "assistant", content: "Found it." }, at(T0 + 1000));
    pool.add({ role: "user", content: "Where is it now?" }, at(T0 + DAY));
    pool.context();
    const r = pool.explain(old).value.factors.recency;
    pool.free();
    return r;
  };
  // A day is four half-lives of six hours.
  const [timed, untimed] = [recency(true), recency(false)];
  assert.ok(Math.abs(timed / untimed - 1 / 16) < 1e-3, `${timed} vs ${untimed}`);
});

test("a tool result's latency, measured or given, sets its generation cost as the importers' latencies do", async () => {
  const pool = new MemoryPool({ model: "gpt-4o", budget: 100000 });
  pool.add({ role: "user", content: "Where is W1001?" });
  // Measured by the clock: the tool ran a quarter of a second.
  pool.add(call("clocked"));
  await new Promise((resolve) => setTimeout(resolve, 250));
  const [clocked] = pool.add(result("clocked"));
  // Measured from the times given: 20 s.
  pool.add(call("slow"), { timestamp: T0 });
  const [slow] = pool.add(result("slow"), { timestamp: T0 + 20000 });
  // Given: 50 ms.
  pool.add(call("fast"));
  const [fast] = pool.add(result("fast"), { latencyMs: 50 });
  pool.context();
  const cost = (id) => pool.explain(id).value.factors.generation_cost;
  assert.ok(cost(slow) > cost(clocked) && cost(clocked) > cost(fast), `${cost(slow)} ${cost(clocked)} ${cost(fast)}`);
  assert.ok(pool.explain(slow).value.explanation.some((s) => s.includes("took 20 s")));
  const latency = Object.fromEntries(exportedChunks(pool).map((c) => [c.id, c.meta.latency_ms]));
  assert.ok(latency[clocked] >= 240 && latency[clocked] < 5000, `${latency[clocked]}`);
  assert.equal(latency[slow], 20000);
  assert.equal(latency[fast], 50);
  // The trace the pool writes, read back by the analyzer, gives the same factor.
  const analysis = analyzeTrace(pool.exportTrace(), { fileName: "run.jsonl" }).traces[0];
  for (const id of [clocked, slow, fast]) {
    assert.ok(Math.abs(analysis.chunks[id].factors.generation_cost - cost(id)) < 1e-6, `chunk ${id}`);
  }
  // Without a time (clock off) nor a latency, the category's prior: between the two.
  const plain = new MemoryPool({ model: "gpt-4o", budget: 100000, clock: false });
  plain.add(call("c"));
  const [unknown] = plain.add(result("c"));
  plain.context();
  const prior = plain.explain(unknown).value.factors.generation_cost;
  assert.ok(cost(slow) > prior && prior > cost(fast), `${prior}`);
  pool.free();
  plain.free();
});

test("a preference is kept where an unmarked message of the same size and age is dropped", () => {
  // Two notes of the same tokens, written at the same time.
  const pool0 = new MemoryPool({ model: "gpt-4o", budget: 1000 });
  const note = (head, words) => {
    let text = head;
    for (let i = 0; pool0.countTokens(text) < 60; i++) text += ` ${words[i % words.length]}`;
    assert.equal(pool0.countTokens(text), 60, text);
    return text;
  };
  const run = [
    [T0, { role: "system", content: "Be brief." }],
    [T0 + 10000, { role: "user", content: note("I prefer", ["aisle", "seats", "and", "quiet", "hotels", "near", "parks"]) }],
    [T0 + 10000, { role: "user", content: note("My trip", ["starts", "in", "Porto", "then", "goes", "south", "by", "train"]) }],
    [T0 + 15000, { role: "assistant", content: "Noted." }],
    [T0 + 20000, { role: "user", content: "Book it." }],
  ];
  pool0.free();
  const decide = (budget, mark) => {
    const pool = new MemoryPool({ model: "gpt-4o", budget });
    run.forEach(([timestamp, m], k) => pool.add(m, { timestamp, preference: k === mark }));
    const sent = pool.context().map((m) => run.findIndex(([, r]) => r === m));
    const out = { sent, full: pool.lastContext.fullTokens, categories: [1, 2].map((id) => pool.explain(id).category) };
    pool.free();
    return out;
  };
  const all = decide(100000, -1);
  assert.deepEqual([all.sent, all.categories], [[0, 1, 2, 3, 4], ["user", "user"]]);
  // Room for one note only (the newest two messages are protected): the value policy gives one
  // up; marked as a preference, that one stays and the other goes.
  const budget = all.full - 40;
  const unmarked = decide(budget, -1).sent;
  const [dropped, other] = unmarked.includes(1) ? [2, 1] : [1, 2];
  assert.deepEqual(unmarked, [0, other, 3, 4]);
  const marked = decide(budget, dropped);
  assert.deepEqual(marked.sent, [0, dropped, 3, 4]);
  assert.equal(marked.categories[dropped - 1], "preference");
});

test("bad add options are clear errors that leave the pool as it was", () => {
  const pool = new MemoryPool({ model: "gpt-4o", budget: 1000 });
  const m = { role: "user", content: "hi" };
  assert.throws(() => pool.add(m, { timestamp: true }), TypeError);
  assert.throws(() => pool.add(m, { timestamp: new Date("nonsense") }), TypeError);
  assert.throws(() => pool.add(m, { timestamp: "last Tuesday" }), /invalid timestamp: "last Tuesday"/);
  assert.throws(() => pool.add(m, { timestamp: 1e17 }), /invalid timestamp/);
  assert.throws(() => pool.add(m, { latencyMs: -1 }), TypeError);
  assert.throws(() => pool.add(m, { preference: "yes" }), TypeError);
  assert.throws(() => pool.add(m, { when: T0 }), /unknown field "when"/);
  assert.throws(() => pool.add(m, 5), TypeError);
  assert.throws(() => pool.add({ role: "system", content: "Be brief." }, { preference: true }), /system prompt/);
  assert.throws(() => new MemoryPool({ budget: 1000, clock: "off" }), TypeError);
  assert.equal(pool.stats().messages, 0);
  pool.add(m, { latencyMs: 5 });
  assert.ok(pool.stats().warnings.some((w) => /no tool result/.test(w)));
  assert.equal(pool.context()[0], m);
  pool.free();
});
