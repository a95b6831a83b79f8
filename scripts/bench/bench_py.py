"""Benchmarks of the installed Python package `memlens` against what a Python user would
otherwise use, in one run on one machine (scripts/py.sh bench runs it in a virtualenv with the
pinned libraries).

1. Token counting throughput on the tau-bench messages: memlens.count_tokens vs tiktoken's
   encode_ordinary, both o200k, totals checked equal.
2. Per-turn cost with 100 / 1,000 / 10,000 messages of history, budget 8,000 tokens, the
   tau-bench messages fed in order: MemLens' pool (add + context, value and window), LangChain
   `trim_messages` over the whole history (strategy "last", start_on "human", include_system)
   with a tiktoken counter and with "approximate", LlamaIndex `Memory` (put + get), and a plain
   Python loop over cached counts (newest messages that fit).

Usage: python scripts/bench/bench_py.py TAU_BENCH_FILE
"""

import json
import os
import platform
import statistics
import sys
import time


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tiktoken_cache import seed  # noqa: E402

os.environ["TIKTOKEN_CACHE_DIR"] = seed()

import memlens  # noqa: E402
import tiktoken  # noqa: E402
from langchain_core.messages import convert_to_messages, trim_messages  # noqa: E402
from llama_index.core.llms import ChatMessage, MessageRole  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402

BUDGET = 8000
SIZES = [100, 1000, 10000]


def best_of(runs, f):
    best, out = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(path):
    tau = json.load(open(path, encoding="utf-8"))
    texts = []
    for r in tau:
        for m in r["traj"]:
            if isinstance(m.get("content"), str) and m["content"]:
                texts.append(m["content"])
            for c in m.get("tool_calls") or []:
                texts.append(c["function"]["arguments"])
    mb = sum(len(t.encode()) for t in texts) / 1e6
    from importlib.metadata import version

    libs = ", ".join(f"{p} {version(p)}" for p in ("memlens", "tiktoken", "langchain-core", "llama-index-core"))
    print(f"# Python {platform.python_version()}; {libs}; {len(texts)} texts, {mb:.2f} MB (tau-bench messages)")

    print("\n## Token counting (o200k, one call per message; best of 3)")
    enc = tiktoken.get_encoding("o200k_base")
    counters = [
        ("memlens.count_tokens", lambda: sum(memlens.count_tokens(t, "gpt-4o") for t in texts)),
        ("tiktoken encode_ordinary", lambda: sum(len(enc.encode_ordinary(t)) for t in texts)),
    ]
    rows = []
    for name, f in counters:
        f()
        rows.append((name, *best_of(3, f)))
    base = rows[1][1]
    print("| counter | tokens | ms | MB/s | vs tiktoken |\n|---|---|---|---|---|")
    for name, secs, total in rows:
        print(f"| {name} | {total} | {secs * 1000:.0f} | {mb / secs:.1f} | {base / secs:.2f}x |")
    if len({r[2] for r in rows}) != 1:
        sys.exit("token totals differ between counters")

    stream = [m for r in tau for m in r["traj"] if m["role"] != "system"]
    system = tau[0]["traj"][0]

    def tiktoken_counter(messages):
        # LangChain's documented tiktoken counter shape: content tokens + per-message overhead.
        n = 3
        for m in messages:
            n += 4 + len(enc.encode_ordinary(m.content if isinstance(m.content, str) else json.dumps(m.content)))
            for c in getattr(m, "tool_calls", None) or []:
                n += len(enc.encode_ordinary(json.dumps(c.get("args", {}))))
        return n

    lc_stream = convert_to_messages(stream)
    lc_system = convert_to_messages([system])[0]
    roles = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT, "tool": MessageRole.TOOL}
    li_stream = [ChatMessage(role=roles.get(m["role"], MessageRole.USER), content=m.get("content") or "",
                             additional_kwargs={k: m[k] for k in ("tool_call_id",) if k in m}) for m in stream]

    def pool_turns(policy, n, turns):
        pool = memlens.MemoryPool(model="gpt-4o", budget=BUDGET, policy=policy)
        pool.add(system)
        i = 0
        for i in range(n):
            pool.add(stream[i % len(stream)])
        pool.context()
        times = []
        for k in range(turns):
            m = stream[(n + k) % len(stream)]
            start = time.perf_counter()
            pool.add(m)
            pool.context()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    def langchain_turns(counter, n, turns):
        history = [lc_system] + [lc_stream[i % len(lc_stream)] for i in range(n)]
        times = []
        for k in range(turns):
            history.append(lc_stream[(n + k) % len(lc_stream)])
            start = time.perf_counter()
            trim_messages(history, max_tokens=BUDGET, token_counter=counter, strategy="last",
                          start_on="human", include_system=True)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    def llamaindex_turns(n, turns):
        memory = Memory.from_defaults(session_id="bench", token_limit=BUDGET)
        memory.put(ChatMessage(role=MessageRole.SYSTEM, content=system["content"]))
        for i in range(n):
            memory.put(li_stream[i % len(li_stream)])
        memory.get()
        times = []
        for k in range(turns):
            start = time.perf_counter()
            memory.put(li_stream[(n + k) % len(li_stream)])
            memory.get()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    def plain_turns(n, turns):
        sys_tokens = len(enc.encode_ordinary(system["content"])) + 4
        counts, msgs = [], []

        def add(m):
            msgs.append(m)
            text = m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content") or "")
            counts.append(len(enc.encode_ordinary(text + json.dumps(m.get("tool_calls") or ""))) + 4)

        for i in range(n):
            add(stream[i % len(stream)])
        times = []
        for k in range(turns):
            start = time.perf_counter()
            add(stream[(n + k) % len(stream)])
            used, j = sys_tokens, len(msgs)
            while j > 0 and used + counts[j - 1] <= BUDGET:
                j -= 1
                used += counts[j]
            context = [system] + msgs[j:]
            times.append(time.perf_counter() - start)
        assert context
        return statistics.median(times)

    print(f"\n## Per turn, budget {BUDGET:,} tokens (median; 300 turns, 20 for trim_messages and"
          " LlamaIndex at 10,000)")
    print("| messages | memlens value | memlens window | LangChain trim_messages (tiktoken) | "
          "trim_messages (approximate) | LlamaIndex Memory | plain loop over cached counts | "
          "window vs trim_messages (tiktoken) |\n|---|---|---|---|---|---|---|---|")
    for n in SIZES:
        slow = 20 if n >= 10000 else 100
        value = pool_turns("value", n, 300)
        window = pool_turns("window", n, 300)
        lc_tik = langchain_turns(tiktoken_counter, n, slow)
        lc_approx = langchain_turns("approximate", n, slow)
        li = llamaindex_turns(n, slow)
        plain = plain_turns(n, 300)
        us = lambda s: f"{s * 1e6:,.0f} µs" if s < 0.01 else f"{s * 1e3:,.1f} ms"  # noqa: E731
        print(f"| {n:,} | {us(value)} | {us(window)} | {us(lc_tik)} | {us(lc_approx)} | {us(li)} | "
              f"{us(plain)} | {lc_tik / window:,.0f}x |")


if __name__ == "__main__":
    main(sys.argv[1])
