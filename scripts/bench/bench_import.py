#!/usr/bin/env python3
"""Import + tokenize throughput: MemLens (native, one thread) vs. Python tiktoken, one run.

usage: scripts/bench/bench_import.py [TRACE_FILE] [RUNS]     (run via scripts/bench/bench.sh)

Measures, on the same machine in the same run:
  memlens      in-process import (parse, build the trace model, count every chunk) of the file;
               the tokenizer is built once beforehand, as in any long-lived host
  tiktoken     Python tiktoken o200k `encode_ordinary` over exactly the chunk texts MemLens counts
               (counting only: no parsing, no model)
  tiktoken+json  json.load of the file, then counting every message's text as a user script would
Reports MB/s of the trace file and the ratio to Python tiktoken.
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from crosscheck_tokens import o200k  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def best_of(runs, fn):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def texts_of_message(m):
    c = m.get("content")
    if isinstance(c, str):
        yield c
    for tc in m.get("tool_calls") or []:
        yield tc.get("function", {}).get("arguments", "")


def main():
    trace = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "../shared/data/traces/tau-bench-gpt-4o-airline.json")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    bench = os.path.join(ROOT, "target/release/memlens-bench")
    memlens_cli = os.path.join(ROOT, "target/release/memlens")
    m = json.loads(subprocess.run([bench, trace, str(runs)], check=True, capture_output=True, text=True).stdout)
    dump = json.loads(subprocess.run([memlens_cli, "inspect", trace, "--json", "--chunks", "--model", "gpt-4o"],
                                     check=True, capture_output=True, text=True).stdout)
    texts = [c["content"] for t in dump["traces"] for c in t["chunk_list"]]
    enc = o200k()
    enc.encode_ordinary("warm up")
    py_count = best_of(runs, lambda: sum(len(enc.encode_ordinary(s)) for s in texts))

    def py_script():
        with open(trace, "rb") as f:
            data = json.load(f)
        n = 0
        for rec in data:
            for msg in rec.get("traj", []):
                for s in texts_of_message(msg):
                    n += len(enc.encode_ordinary(s))
        return n

    py_full = best_of(runs, py_script)
    mb = m["file_bytes"] / 1e6
    rows = [
        ("memlens import + count (Rust, 1 thread)", m["median_s"]),
        ("Python tiktoken, count the same chunk texts", py_count),
        ("Python json.load + tiktoken count", py_full),
    ]
    print(f"file: {os.path.basename(trace)} ({mb:.2f} MB; {m['text_bytes'] / 1e6:.2f} MB of chunk text; {m['tokens']} tokens)")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; median of {runs} runs")
    print(f"memlens tokenizer build (once per process): {m['encoder_build_s'] * 1000:.0f} ms, not included below")
    print()
    print("| what | median time | MB/s of trace file | vs. Python tiktoken counting |")
    print("|---|---|---|---|")
    for name, s in rows:
        print(f"| {name} | {s * 1000:.0f} ms | {mb / s:.1f} | {py_count / s:.2f}x |")
    memory(trace)


def peak_rss_mb(path):
    """Peak resident memory of importing and summarizing `path` in a fresh process, in MB."""
    bench = os.path.join(ROOT, "target/release/memlens-bench")
    out = subprocess.run([bench, "--memory", path], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["peak_rss_bytes"] / 1e6


def memory(trace):
    """Peak memory of import + summary of the file and of 10 copies of its records."""
    import tempfile

    with open(trace) as f:
        records = json.load(f)
    print()
    print("| input | size | peak RSS, import + summary | (RSS - baseline) / size |")
    print("|---|---|---|---|")
    small = peak_rss_mb(os.path.join(ROOT, "tests/fixtures/openai/conversations.jsonl"))
    print(f"| a 0.4 KB fixture (baseline: binary + tokenizer) | 0.0 MB | {small:.0f} MB | - |")
    with tempfile.TemporaryDirectory() as tmp:
        jsonl, array = os.path.join(tmp, "x10.jsonl"), os.path.join(tmp, "x10.json")
        copies = [dict(r, trial=f"{r.get('trial')}-{i}") for i in range(10) for r in records]
        with open(jsonl, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in copies)
        with open(array, "w") as f:
            json.dump(copies, f)
        for label, path in [("the file", trace), ("10 copies, JSON array", array), ("10 copies, JSON Lines", jsonl)]:
            size = os.path.getsize(path) / 1e6
            rss = peak_rss_mb(path)
            print(f"| {label} | {size:.1f} MB | {rss:.0f} MB | {(rss - small) / size:.1f} |")


if __name__ == "__main__":
    main()
