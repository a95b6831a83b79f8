// A small agent loop with MemLens managing its memory (a mock model: no network, no API key).
// Each turn the agent adds what happened to the pool and sends `pool.context()` instead of its
// whole history; at the end it prints what that saved and writes its run for the web app.
//
//   node examples/agent-loop.mjs            # after `npm install memlens` (or scripts/npm.sh build)
import { writeFileSync } from "node:fs";
import { MemoryPool } from "memlens";

// A stand-in for the model: looks up an order, then answers. Returns an OpenAI-style message.
function mockModel(messages, turn) {
  const last = messages[messages.length - 1];
  if (last.role === "user") {
    return {
      role: "assistant",
      content: null,
      tool_calls: [{ id: `call_${turn}`, type: "function", function: { name: "get_order", arguments: JSON.stringify({ order_id: `W${1000 + turn}` }) } }],
    };
  }
  return { role: "assistant", content: `Order W${1000 + turn} ships on day ${turn + 2}.` };
}

// A stand-in tool with a verbose JSON result, as real APIs return.
function getOrder(args) {
  const { order_id } = JSON.parse(args);
  const items = Array.from({ length: 12 }, (_, i) => ({ sku: `${order_id}-${i}`, name: `item ${i}`, qty: 1 + (i % 3), price: 9.99 + i, warehouse: "LIS-2", status: "packed" }));
  return JSON.stringify({ order_id, customer: "Ana", items, history: items.map((it) => ({ sku: it.sku, event: "scanned", at: "2026-11-29T10:00:00Z" })) });
}

const pool = new MemoryPool({ model: "gpt-4o", budget: 3000, policy: "value" });
pool.add({ role: "system", content: "You are a support agent. Look orders up with get_order before answering." });

for (let turn = 0; turn < 12; turn++) {
  pool.add({ role: "user", content: `Where is my order W${1000 + turn}?` });
  for (;;) {
    const context = pool.context(); // what fits the budget, same message shapes as added
    const reply = mockModel(context, turn);
    pool.recordUsage({ prompt_tokens: pool.lastContext.tokens, completion_tokens: 20 });
    pool.add(reply);
    if (!reply.tool_calls) break;
    for (const call of reply.tool_calls) {
      pool.add({ role: "tool", tool_call_id: call.id, content: getOrder(call.function.arguments) });
    }
  }
}

const s = pool.stats();
console.log(`${s.calls} model calls: sent ${s.sentTokens} input tokens instead of ${s.fullTokens} ` +
  `(${(100 * (1 - s.sentTokens / s.fullTokens)).toFixed(1)}% saved, ~$${(s.fullInputCostUsd - s.estInputCostUsd).toFixed(4)}), ` +
  `${s.dropped} chunks dropped, ${s.overBudgetCalls} calls over budget`);
writeFileSync("agent-run.memlens.jsonl", pool.exportTrace());
console.log("wrote agent-run.memlens.jsonl: open it in the MemLens web app");
pool.free();
