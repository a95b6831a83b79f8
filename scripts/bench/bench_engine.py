#!/usr/bin/env python3
"""Per-turn cost of the policy engine vs. what a Python agent runs today, in one run.

usage: scripts/bench/bench_engine.py            (run via scripts/bench/bench.sh)

The same synthetic support conversation (user and assistant turns, a tool call and result every
fourth turn) with 100 / 1,000 / 10,000 messages already in the history, budget 8,000 tokens:
  memlens window / value   add the new message + decide the context (Rust, in-process)
  langchain trim_messages  trim_messages(strategy="last", include_system=True, start_on="human")
                           with a tiktoken o200k token counter, on the whole history, every call
  python cached loop       a loop over cached per-message counts from the end (the floor)
Medians over 200 turns (memlens) or 20-200 calls (Python).
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from crosscheck_tokens import o200k  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
HISTORIES = [100, 1000, 10000]


def text(i):
    r = i % 8
    if r in (0, 4):
        return "user", f"Customer message {i}: my order ORD{i} has not arrived, please check."
    if r == 5:
        return "tool_call", '{"order_id": "ORD%d"}' % (i - 1)
    if r == 6:
        return "tool", '{"order_id": "ORD%d", "status": "in transit", "eta": "2025-03-%02d"}' % (i - 2, i % 28 + 1)
    return "assistant", f"Order ORD{max(i - 1, 0)} is in transit and should arrive soon (turn {i})."


def langchain_history(n):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    msgs = [SystemMessage("You are a support agent for Acme. Be brief.")]
    for i in range(1, n + 1):
        kind, body = text(i)
        if kind == "user":
            msgs.append(HumanMessage(body))
        elif kind == "assistant":
            msgs.append(AIMessage(body))
        elif kind == "tool_call":
            msgs.append(AIMessage("", tool_calls=[{"id": f"call_{i - i % 8}", "name": "lookup_order", "args": json.loads(body)}]))
        else:
            msgs.append(ToolMessage(body, tool_call_id=f"call_{i - i % 8}"))
    return msgs


def median_ms(fn, calls):
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main():
    from langchain_core.messages import trim_messages

    enc = o200k()

    def counter(messages):
        # 3 framing tokens per message plus the content, as OpenAI's cookbook counts.
        n = 0
        for m in messages:
            n += 3 + len(enc.encode_ordinary(m.content if isinstance(m.content, str) else str(m.content)))
            for tc in getattr(m, "tool_calls", None) or []:
                n += len(enc.encode_ordinary(json.dumps(tc["args"]))) + 1
        return n

    bench = os.path.join(ROOT, "target/release/memlens-bench")
    print("| messages in history | memlens window | memlens value | LangChain trim_messages | Python loop over cached counts | trim_messages / memlens value |")
    print("|---|---|---|---|---|---|")
    for n in HISTORIES:
        rust = {}
        for policy in ("window", "value"):
            out = subprocess.run([bench, "--engine", policy, str(n)], check=True, capture_output=True, text=True).stdout
            rust[policy] = json.loads(out)["median_us"] / 1000
        history = langchain_history(n)
        calls = 200 if n <= 1000 else 20
        lc = median_ms(lambda: trim_messages(history, max_tokens=8000, strategy="last", token_counter=counter,
                                             include_system=True, start_on="human"), calls)
        cached = [counter([m]) for m in history]

        def loop():
            budget, total, k = 8000 - cached[0], 0, len(cached)
            while k > 1 and total + cached[k - 1] <= budget:
                k -= 1
                total += cached[k]
            return k

        py = median_ms(loop, 200)
        print(f"| {n:,} | {rust['window']:.3f} ms | {rust['value']:.3f} ms | {lc:.2f} ms | {py:.3f} ms | {lc / rust['value']:.0f}x |")


if __name__ == "__main__":
    main()
